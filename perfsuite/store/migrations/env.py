"""Alembic environment: perfsuite runs migrations in-process (store.database.migrate) and
passes its connection in ``config.attributes``; no alembic.ini is needed."""

from alembic import context

from perfsuite.store.schema import metadata

connection = context.config.attributes["connection"]
context.configure(
    connection=connection,
    target_metadata=metadata,
    render_as_batch=True,  # SQLite cannot ALTER most things; batch mode copies the table
    compare_type=True,
)
with context.begin_transaction():
    context.run_migrations()
