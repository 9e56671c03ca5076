"""The history database's tables (SQLAlchemy Core), keyed as Conbench and Bencher key theirs:
a result belongs to a run on a host (hardware class) and to a benchmark (the point id).
Alembic migrations in ``store/migrations`` create and change them; a test checks that the
migrated database and these definitions agree on SQLite and PostgreSQL."""

from __future__ import annotations

from sqlalchemy import (
    JSON,
    Boolean,
    Column,
    DateTime,
    Float,
    ForeignKey,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
)

metadata = MetaData(
    naming_convention={  # named constraints: SQLite batch migrations need names
        "ix": "ix_%(column_0_label)s",
        "uq": "uq_%(table_name)s_%(column_0_name)s",
        "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
        "pk": "pk_%(table_name)s",
    }
)


def _id() -> Column:
    return Column("id", Integer, primary_key=True, autoincrement=True)


def _ref(table: str, *, nullable: bool = False) -> Column:
    return Column(
        f"{table.rstrip('s')}_id",
        Integer,
        ForeignKey(f"{table}.id", ondelete="CASCADE"),
        nullable=nullable,
        index=True,
    )


hosts = Table(
    "hosts",
    metadata,
    _id(),
    Column("fingerprint_hash", String(64), nullable=False, unique=True),
    Column("hardware_class", String(128), nullable=False, index=True),
    Column("fingerprint", JSON, nullable=False),
)

runs = Table(
    "runs",
    metadata,
    _id(),
    Column("run_key", String(64), nullable=False, unique=True),  # sha256 of the content
    Column("kind", String(16), nullable=False),  # run | baseline
    _ref("hosts"),
    Column("started_at", DateTime(timezone=True), nullable=False, index=True),
    Column("profile", String(64), nullable=False),
    Column("perfsuite_version", String(32)),
    Column("software", JSON, nullable=False),
    Column("commit", String(64)),
    Column("source", Text),
    Column("excluded", Boolean, nullable=False, default=False),
    Column("excluded_reason", Text),
)

benchmarks = Table(
    "benchmarks",
    metadata,
    _id(),
    Column("name", String(255), nullable=False, unique=True),
    Column("point", JSON, nullable=False),
)

results = Table(
    "results",
    metadata,
    _id(),
    _ref("runs"),
    _ref("benchmarks"),
    Column("status", String(16), nullable=False),
    Column("latency_median_ms", Float),
    Column("latency_p90_ms", Float),
    Column("latency_p99_ms", Float),
    Column("throughput_ips", Float),
    Column("cv", Float),
    Column("n", Integer),
    Column("samples_s", JSON, nullable=False),  # thinned, as in baselines
    Column("stats", JSON),
    Column("interference", JSON),
    Column("contaminated", Boolean, nullable=False, default=False),
    Column("error", Text),
    UniqueConstraint("run_id", "benchmark_id", name="uq_results_run_benchmark"),
)

verdicts = Table(
    "verdicts",
    metadata,
    _id(),
    _ref("runs"),
    _ref("benchmarks"),
    Column("verdict", String(32), nullable=False),
    Column("change", Float),
    Column("p_value", Float),
    Column("confirmed", Boolean),
    Column("reason", Text),
)

change_points = Table(
    "change_points",
    metadata,
    _id(),
    _ref("benchmarks"),
    Column("hardware_class", String(128), nullable=False),
    Column("metric", String(32), nullable=False),
    _ref("runs"),  # the first run after the change
    Column("before", Float, nullable=False),
    Column("after", Float, nullable=False),
    Column("change", Float, nullable=False),
    Column("p_value", Float, nullable=False),
    Column("detected_at", DateTime(timezone=True), nullable=False),
    UniqueConstraint(
        "benchmark_id", "hardware_class", "metric", "run_id", name="uq_change_points_series_run"
    ),
)

annotations = Table(
    "annotations",
    metadata,
    _id(),
    Column("benchmarks", String(255), nullable=False),  # an fnmatch glob of point ids
    Column("hardware_class", String(128)),  # None: every class
    _ref("runs"),  # from this run on
    Column("accepted", Boolean, nullable=False),  # an accepted change resets the reference
    Column("text", Text, nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False),
)

qualifications = Table(
    "qualifications",
    metadata,
    _id(),
    Column("report_key", String(64), nullable=False, unique=True),
    _ref("hosts"),
    Column("recorded_at", DateTime(timezone=True), nullable=False),
    Column("verdict", String(8), nullable=False),
    Column("report", JSON, nullable=False),
)

baselines = Table(  # revision 0002: baselines kept in the database (the Store protocol)
    "baselines",
    metadata,
    _id(),
    Column("hardware_class", String(128), nullable=False),
    Column("profile", String(64), nullable=False),
    Column("document", JSON, nullable=False),  # a whole perfsuite.baseline/2
    Column("saved_at", DateTime(timezone=True), nullable=False),
    UniqueConstraint("hardware_class", "profile"),
)
