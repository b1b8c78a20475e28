"""Dagster wiring: the only package that imports Dagster. Each module is one pipeline stage."""
