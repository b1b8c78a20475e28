"""The example queries the main command prints compare MCP versions as versions."""

from __future__ import annotations

import duckdb

from datagouv_eval_pipeline.cli.experiment import EXAMPLE_QUERIES


def test_the_version_query_orders_versions_as_versions_not_text() -> None:
    conn = duckdb.connect()
    conn.execute(
        "CREATE TABLE cell_comparison (cell_a VARCHAR, value_a VARCHAR, value_b VARCHAR, "
        "paired_difference DOUBLE, difference_ci_low DOUBLE, difference_ci_high DOUBLE, "
        "paired_runs INTEGER, p_adjusted DOUBLE, verdict VARCHAR, mde DOUBLE, "
        "dimension VARCHAR, metric VARCHAR, tier VARCHAR)"
    )
    pairs = [("0.2.5", "0.2.26"), ("0.2.26", "0.2.5"), ("0.2.19", "0.2.26"), ("0.2.26", "0.2.19")]
    pairs += [("0.2.5", "0.2.19"), ("0.2.19", "0.2.5")]
    for a, b in pairs:
        conn.execute(
            "INSERT INTO cell_comparison VALUES ('c', ?, ?, 0, 0, 0, 1, 1, 'no difference', 0, "
            "'mcp_version', 'accuracy', 'minimal')",
            [a, b],
        )
    (query,) = [q for q in EXAMPLE_QUERIES if "FROM cell_comparison" in q]
    rows = [(r[1], r[2]) for r in conn.execute(query).fetchall()]
    # As text "0.2.26" < "0.2.5"; as versions 0.2.5 comes first.
    assert rows == [("0.2.5", "0.2.19"), ("0.2.5", "0.2.26"), ("0.2.19", "0.2.26")]
