"""History tables: hosts, runs, benchmarks, results, verdicts, change points, annotations,
qualifications.

Revision ID: 0001
Revises:
Create Date: 2026-12-03
"""

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:

    op.create_table(
        "benchmarks",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("name", sa.String(length=255), nullable=False),
        sa.Column("point", sa.JSON(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_benchmarks")),
        sa.UniqueConstraint("name", name=op.f("uq_benchmarks_name")),
    )
    op.create_table(
        "hosts",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("fingerprint_hash", sa.String(length=64), nullable=False),
        sa.Column("hardware_class", sa.String(length=128), nullable=False),
        sa.Column("fingerprint", sa.JSON(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_hosts")),
        sa.UniqueConstraint("fingerprint_hash", name=op.f("uq_hosts_fingerprint_hash")),
    )
    with op.batch_alter_table("hosts", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_hosts_hardware_class"), ["hardware_class"], unique=False
        )

    op.create_table(
        "qualifications",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("report_key", sa.String(length=64), nullable=False),
        sa.Column("host_id", sa.Integer(), nullable=False),
        sa.Column("recorded_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("verdict", sa.String(length=8), nullable=False),
        sa.Column("report", sa.JSON(), nullable=False),
        sa.ForeignKeyConstraint(
            ["host_id"],
            ["hosts.id"],
            name=op.f("fk_qualifications_host_id_hosts"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_qualifications")),
        sa.UniqueConstraint("report_key", name=op.f("uq_qualifications_report_key")),
    )
    with op.batch_alter_table("qualifications", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_qualifications_host_id"), ["host_id"], unique=False)

    op.create_table(
        "runs",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("run_key", sa.String(length=64), nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("host_id", sa.Integer(), nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("profile", sa.String(length=64), nullable=False),
        sa.Column("perfsuite_version", sa.String(length=32), nullable=True),
        sa.Column("software", sa.JSON(), nullable=False),
        sa.Column("commit", sa.String(length=64), nullable=True),
        sa.Column("source", sa.Text(), nullable=True),
        sa.Column("excluded", sa.Boolean(), nullable=False),
        sa.Column("excluded_reason", sa.Text(), nullable=True),
        sa.ForeignKeyConstraint(
            ["host_id"], ["hosts.id"], name=op.f("fk_runs_host_id_hosts"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_runs")),
        sa.UniqueConstraint("run_key", name=op.f("uq_runs_run_key")),
    )
    with op.batch_alter_table("runs", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_runs_host_id"), ["host_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_runs_started_at"), ["started_at"], unique=False)

    op.create_table(
        "annotations",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("benchmarks", sa.String(length=255), nullable=False),
        sa.Column("hardware_class", sa.String(length=128), nullable=True),
        sa.Column("run_id", sa.Integer(), nullable=False),
        sa.Column("accepted", sa.Boolean(), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["run_id"], ["runs.id"], name=op.f("fk_annotations_run_id_runs"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_annotations")),
    )
    with op.batch_alter_table("annotations", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_annotations_run_id"), ["run_id"], unique=False)

    op.create_table(
        "change_points",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("benchmark_id", sa.Integer(), nullable=False),
        sa.Column("hardware_class", sa.String(length=128), nullable=False),
        sa.Column("metric", sa.String(length=32), nullable=False),
        sa.Column("run_id", sa.Integer(), nullable=False),
        sa.Column("before", sa.Float(), nullable=False),
        sa.Column("after", sa.Float(), nullable=False),
        sa.Column("change", sa.Float(), nullable=False),
        sa.Column("p_value", sa.Float(), nullable=False),
        sa.Column("detected_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["benchmark_id"],
            ["benchmarks.id"],
            name=op.f("fk_change_points_benchmark_id_benchmarks"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["run_id"], ["runs.id"], name=op.f("fk_change_points_run_id_runs"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_change_points")),
        sa.UniqueConstraint(
            "benchmark_id", "hardware_class", "metric", "run_id", name="uq_change_points_series_run"
        ),
    )
    with op.batch_alter_table("change_points", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_change_points_benchmark_id"), ["benchmark_id"], unique=False
        )
        batch_op.create_index(batch_op.f("ix_change_points_run_id"), ["run_id"], unique=False)

    op.create_table(
        "results",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("run_id", sa.Integer(), nullable=False),
        sa.Column("benchmark_id", sa.Integer(), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("latency_median_ms", sa.Float(), nullable=True),
        sa.Column("latency_p90_ms", sa.Float(), nullable=True),
        sa.Column("latency_p99_ms", sa.Float(), nullable=True),
        sa.Column("throughput_ips", sa.Float(), nullable=True),
        sa.Column("cv", sa.Float(), nullable=True),
        sa.Column("n", sa.Integer(), nullable=True),
        sa.Column("samples_s", sa.JSON(), nullable=False),
        sa.Column("stats", sa.JSON(), nullable=True),
        sa.Column("interference", sa.JSON(), nullable=True),
        sa.Column("contaminated", sa.Boolean(), nullable=False),
        sa.Column("error", sa.Text(), nullable=True),
        sa.ForeignKeyConstraint(
            ["benchmark_id"],
            ["benchmarks.id"],
            name=op.f("fk_results_benchmark_id_benchmarks"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["run_id"], ["runs.id"], name=op.f("fk_results_run_id_runs"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_results")),
        sa.UniqueConstraint("run_id", "benchmark_id", name="uq_results_run_benchmark"),
    )
    with op.batch_alter_table("results", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_results_benchmark_id"), ["benchmark_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_results_run_id"), ["run_id"], unique=False)

    op.create_table(
        "verdicts",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("run_id", sa.Integer(), nullable=False),
        sa.Column("benchmark_id", sa.Integer(), nullable=False),
        sa.Column("verdict", sa.String(length=32), nullable=False),
        sa.Column("change", sa.Float(), nullable=True),
        sa.Column("p_value", sa.Float(), nullable=True),
        sa.Column("confirmed", sa.Boolean(), nullable=True),
        sa.Column("reason", sa.Text(), nullable=True),
        sa.ForeignKeyConstraint(
            ["benchmark_id"],
            ["benchmarks.id"],
            name=op.f("fk_verdicts_benchmark_id_benchmarks"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["run_id"], ["runs.id"], name=op.f("fk_verdicts_run_id_runs"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_verdicts")),
    )
    with op.batch_alter_table("verdicts", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_verdicts_benchmark_id"), ["benchmark_id"], unique=False
        )
        batch_op.create_index(batch_op.f("ix_verdicts_run_id"), ["run_id"], unique=False)


def downgrade() -> None:

    with op.batch_alter_table("verdicts", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_verdicts_run_id"))
        batch_op.drop_index(batch_op.f("ix_verdicts_benchmark_id"))

    op.drop_table("verdicts")
    with op.batch_alter_table("results", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_results_run_id"))
        batch_op.drop_index(batch_op.f("ix_results_benchmark_id"))

    op.drop_table("results")
    with op.batch_alter_table("change_points", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_change_points_run_id"))
        batch_op.drop_index(batch_op.f("ix_change_points_benchmark_id"))

    op.drop_table("change_points")
    with op.batch_alter_table("annotations", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_annotations_run_id"))

    op.drop_table("annotations")
    with op.batch_alter_table("runs", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_runs_started_at"))
        batch_op.drop_index(batch_op.f("ix_runs_host_id"))

    op.drop_table("runs")
    with op.batch_alter_table("qualifications", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_qualifications_host_id"))

    op.drop_table("qualifications")
    with op.batch_alter_table("hosts", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_hosts_hardware_class"))

    op.drop_table("hosts")
    op.drop_table("benchmarks")
