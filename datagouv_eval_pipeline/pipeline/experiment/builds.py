"""Which real MCP server builds have code their cells have not been run on yet.

A ``build:`` entry of ``mcp_versions.yml`` is a cell like any other: a new entry is a new
partition, which the ``new_cells`` sensor runs. What a partition cannot show is a build whose
*code* changed under the same entry: a ``path:`` checkout with new commits, a ``git:`` branch
fetched again, a package reinstalled. The agent stage records the code digest it ran
(``mcp_build.code_digest`` in the cell's document); this module compares it with the digest of
the code a start would run now
(:func:`~datagouv_eval_pipeline.world.mcp_builds.current_code_digest`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from datagouv_eval_pipeline.core.benchmark import Cell
from datagouv_eval_pipeline.pipeline.experiment.documents import AgentRunsDocument
from datagouv_eval_pipeline.pipeline.experiment.stages import AGENT_RUNS
from datagouv_eval_pipeline.pipeline.experiment.store import RunStore, RunStoreError
from datagouv_eval_pipeline.world.mcp_builds import current_code_digest


@dataclass(frozen=True)
class BuildChange:
    """A build cell whose server code differs from the code its results were made with.

    Attributes:
        cell_key: The cell.
        spec: The build, as configured.
        digest: The code digest a start would run now.
        previous: The digest the cell's stored results were made with.
    """

    cell_key: str
    spec: str
    digest: str
    previous: str | None


def changed_builds(
    cells: Sequence[Cell], store: RunStore, *, builds_dir: Path | None = None
) -> tuple[list[BuildChange], list[str]]:
    """The build cells to run again, and notes on the ones that cannot be told.

    Cells never run are left to the ``new_cells`` sensor; a ``package``/``git`` build whose
    environment is gone from the cache cannot be hashed without installing it (noted).

    Args:
        cells: The partitions' cells.
        store: The run store holding the cells' ``agent_runs`` documents.
        builds_dir: The builds cache (default: ``data/mcp_builds``).
    """
    changes: list[BuildChange] = []
    notes: list[str] = []
    for cell in cells:
        if cell.mcp_build is None or "mcp" not in cell.capabilities:
            continue
        try:
            document = store.read_document(AGENT_RUNS, cell.key, AgentRunsDocument)
        except RunStoreError:
            continue  # an unreadable document is the warehouse's to report
        if document is None:
            continue
        recorded = document.mcp_build.code_digest if document.mcp_build else None
        digest = current_code_digest(cell.mcp_build, builds_dir)
        if digest is None:
            notes.append(f"{cell.key}: build {cell.mcp_build.spec} is not installed")
            continue
        if digest != recorded:
            changes.append(BuildChange(cell.key, cell.mcp_build.spec, digest, recorded))
    return changes, notes
