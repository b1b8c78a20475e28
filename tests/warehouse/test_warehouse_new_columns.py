"""A warehouse written before a column was added gets the column in place, rows kept."""

from __future__ import annotations

from pathlib import Path

from datagouv_eval_pipeline.pipeline.warehouse import connect, create_schema


def test_a_file_without_the_mcp_source_columns_gets_them_and_keeps_its_rows(
    tmp_path: Path,
) -> None:
    path = tmp_path / "w.duckdb"
    conn = connect(path)
    conn.execute("INSERT INTO eval.tasks VALUES ('t', 'h', 1, 'n', 'fr', 'answer', 'active', 's')")
    # The file as the previous code wrote it: no mcp_source / mcp_build in eval.cells.
    conn.execute("ALTER TABLE eval.cells DROP COLUMN mcp_source")
    conn.execute("ALTER TABLE eval.cells DROP COLUMN mcp_build")
    conn.close()
    conn = connect(path)
    create_schema(conn)
    columns = [
        row[0]
        for row in conn.execute(
            "SELECT column_name FROM information_schema.columns "
            "WHERE table_schema = 'eval' AND table_name = 'cells'"
        ).fetchall()
    ]
    assert {"mcp_source", "mcp_build"} <= set(columns)
    assert conn.execute("SELECT count(*) FROM eval.tasks").fetchone() == (1,)


def test_a_statistics_table_of_an_older_shape_is_recreated_with_the_new_columns(
    tmp_path: Path,
) -> None:
    path = tmp_path / "w.duckdb"
    conn = connect(path)
    conn.execute("INSERT INTO eval.tasks VALUES ('t', 'h', 1, 'n', 'fr', 'answer', 'active', 's')")
    # eval.comparisons as the previous code wrote it: no coverage columns (runs is NOT NULL,
    # so it cannot be added in place); its rows are recomputed by every statistics stage.
    conn.execute("ALTER TABLE eval.comparisons DROP COLUMN coverage_differs")
    conn.execute("ALTER TABLE eval.comparisons DROP COLUMN runs")
    conn.close()
    conn = connect(path)
    columns = [
        row[0]
        for row in conn.execute(
            "SELECT column_name FROM information_schema.columns "
            "WHERE table_schema = 'eval' AND table_name = 'comparisons'"
        ).fetchall()
    ]
    assert {"runs", "coverage_differs", "verdict_note"} <= set(columns)
    # The loaded tables are kept as they were.
    assert conn.execute("SELECT count(*) FROM eval.tasks").fetchone() == (1,)
