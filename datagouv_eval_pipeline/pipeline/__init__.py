"""The experiment pipeline: agent runs, pre-flight, warehouse, report (no Dagster)."""
