"""The table of metric names in ``docs/warehouse.md``, generated from the metric registry.

The section "Metric names (``eval.metrics.metric``)" lists every metric of
:data:`~datagouv_eval_pipeline.core.metrics.registry.METRICS` between two markers;
``datagouv-eval schema`` rewrites what lies between them and ``--check`` verifies it, so the
page cannot drift from the rows the loader writes.
"""

from __future__ import annotations

from collections.abc import Sequence

from datagouv_eval_pipeline.base.project_files import PACKAGE_DIR
from datagouv_eval_pipeline.core.metrics import registry

WAREHOUSE_DOCS = PACKAGE_DIR.parent / "docs" / "warehouse.md"
"""The page holding the generated table (absent from an installed wheel)."""

BEGIN = (
    "<!-- generated from datagouv_eval_pipeline/core/metrics/registry.py"
    " by `datagouv-eval schema`: do not edit -->"
)
END = "<!-- end of the generated metric names -->"


class MarkersMissingError(ValueError):
    """The page lacks the markers around the generated table."""


def metric_table(metrics: Sequence[registry.Metric] | None = None) -> str:
    """The Markdown table of the metrics (the registry's by default), one row each, in order."""
    lines = [
        "| metric | tier | aggregation | bounded | source | what |",
        "|---|---|---|---|---|---|",
    ]
    for entry in registry.METRICS if metrics is None else metrics:
        tiers = ", ".join(entry.tiers)
        bounded = "yes" if entry.bounded else "no"
        doc = entry.doc + (" Lower is better." if entry.lower_is_better else "")
        lines.append(
            f"| `{entry.name}` | {tiers} | {entry.aggregation} | {bounded} | {entry.source} "
            f"| {doc} |"
        )
    return "\n".join(lines)


def with_metric_table(text: str, metrics: Sequence[registry.Metric] | None = None) -> str:
    """``text`` with the generated table between the markers replaced.

    Raises:
        MarkersMissingError: When the text lacks a marker (naming the one missing).
    """
    for marker in (BEGIN, END):
        if marker not in text:
            raise MarkersMissingError(f"{WAREHOUSE_DOCS.name}: no marker {marker!r}")
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    return f"{head}{BEGIN}\n{metric_table(metrics)}\n{END}{tail}"
