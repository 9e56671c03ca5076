"""The history database's tables (SQLAlchemy Core), keyed as Conbench and Bencher key theirs:
a result belongs to a run on a host (hardware class) and to a benchmark (the point id).
Alembic migrations in ``store/migrations`` create and change them; a test checks that the
migrated database and these definitions agree on SQLite and PostgreSQL."""

from __future__ import annotations

import sqlalchemy as sa

metadata = sa.MetaData(
    naming_convention={  # named constraints: SQLite batch migrations need names
        "ix": "ix_%(column_0_label)s",
        "uq": "uq_%(table_name)s_%(column_0_name)s",
        "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
        "pk": "pk_%(table_name)s",
    }
)


def _id() -> sa.Column:
    return sa.Column("id", sa.Integer, primary_key=True, autoincrement=True)


def _ref(table: str, *, nullable: bool = False) -> sa.Column:
    fk = sa.ForeignKey(f"{table}.id", ondelete="CASCADE")
    return sa.Column(f"{table.rstrip('s')}_id", sa.Integer, fk, nullable=nullable, index=True)


hosts = sa.Table(
    "hosts",
    metadata,
    _id(),
    sa.Column("fingerprint_hash", sa.String(64), nullable=False, unique=True),
    sa.Column("hardware_class", sa.String(128), nullable=False, index=True),
    sa.Column("fingerprint", sa.JSON, nullable=False),
)

runs = sa.Table(
    "runs",
    metadata,
    _id(),
    sa.Column("run_key", sa.String(64), nullable=False, unique=True),  # sha256 of the content
    sa.Column("kind", sa.String(16), nullable=False),  # run | baseline
    _ref("hosts"),
    sa.Column("started_at", sa.DateTime(timezone=True), nullable=False, index=True),
    sa.Column("profile", sa.String(64), nullable=False),
    sa.Column("perfsuite_version", sa.String(32)),
    sa.Column("software", sa.JSON, nullable=False),
    sa.Column("commit", sa.String(64)),
    sa.Column("source", sa.Text),
    sa.Column("branch", sa.String(255)),  # revision 0003: the rest of the run's provenance
    sa.Column("dirty", sa.Boolean),
    sa.Column("repository", sa.Text),
    sa.Column("excluded", sa.Boolean, nullable=False, default=False),
    sa.Column("excluded_reason", sa.Text),
)

benchmarks = sa.Table(
    "benchmarks",
    metadata,
    _id(),
    sa.Column("name", sa.String(255), nullable=False, unique=True),
    sa.Column("point", sa.JSON, nullable=False),
)

results = sa.Table(
    "results",
    metadata,
    _id(),
    _ref("runs"),
    _ref("benchmarks"),
    sa.Column("status", sa.String(16), nullable=False),
    sa.Column("latency_median_ms", sa.Float),
    sa.Column("latency_p90_ms", sa.Float),
    sa.Column("latency_p99_ms", sa.Float),
    sa.Column("throughput_ips", sa.Float),
    sa.Column("cv", sa.Float),
    sa.Column("n", sa.Integer),
    sa.Column("samples_s", sa.JSON, nullable=False),  # thinned, as in baselines
    sa.Column("stats", sa.JSON),
    sa.Column("interference", sa.JSON),
    sa.Column("contaminated", sa.Boolean, nullable=False, default=False),
    sa.Column("error", sa.Text),
    sa.Column("headline", sa.JSON),  # revision 0004: a scenario point's gated rate, or None
    sa.Column("decode", sa.JSON),  # revision 0005: a decode point's TTFT, TPOT, roofline
    sa.UniqueConstraint("run_id", "benchmark_id", name="uq_results_run_benchmark"),
)

verdicts = sa.Table(
    "verdicts",
    metadata,
    _id(),
    _ref("runs"),
    _ref("benchmarks"),
    sa.Column("verdict", sa.String(32), nullable=False),
    sa.Column("change", sa.Float),
    sa.Column("p_value", sa.Float),
    sa.Column("confirmed", sa.Boolean),
    sa.Column("reason", sa.Text),
)

change_points = sa.Table(
    "change_points",
    metadata,
    _id(),
    _ref("benchmarks"),
    sa.Column("hardware_class", sa.String(128), nullable=False),
    sa.Column("metric", sa.String(32), nullable=False),
    _ref("runs"),  # the first run after the change
    sa.Column("before", sa.Float, nullable=False),
    sa.Column("after", sa.Float, nullable=False),
    sa.Column("change", sa.Float, nullable=False),
    sa.Column("p_value", sa.Float, nullable=False),
    sa.Column("detected_at", sa.DateTime(timezone=True), nullable=False),
    sa.UniqueConstraint(
        "benchmark_id", "hardware_class", "metric", "run_id", name="uq_change_points_series_run"
    ),
)

annotations = sa.Table(
    "annotations",
    metadata,
    _id(),
    sa.Column("benchmarks", sa.String(255), nullable=False),  # an fnmatch glob of point ids
    sa.Column("hardware_class", sa.String(128)),  # None: every class
    _ref("runs"),  # from this run on
    sa.Column("accepted", sa.Boolean, nullable=False),  # an accepted change resets the reference
    sa.Column("text", sa.Text, nullable=False),
    sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
)

qualifications = sa.Table(
    "qualifications",
    metadata,
    _id(),
    sa.Column("report_key", sa.String(64), nullable=False, unique=True),
    _ref("hosts"),
    sa.Column("recorded_at", sa.DateTime(timezone=True), nullable=False),
    sa.Column("verdict", sa.String(8), nullable=False),
    sa.Column("report", sa.JSON, nullable=False),
)

baselines = sa.Table(  # revision 0002: baselines kept in the database (the Store protocol)
    "baselines",
    metadata,
    _id(),
    sa.Column("hardware_class", sa.String(128), nullable=False),
    sa.Column("profile", sa.String(64), nullable=False),
    sa.Column("document", sa.JSON, nullable=False),  # a whole perfsuite.baseline/2
    sa.Column("saved_at", sa.DateTime(timezone=True), nullable=False),
    sa.UniqueConstraint("hardware_class", "profile"),
)
