"""Build time only: regenerate the twin's snapshot from the reviewable ``source/`` files.

Not imported at run time; ``datagouv-eval twin build-snapshot`` runs :mod:`.build`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from datagouv_eval_pipeline.base.faces import lazy_attributes

if TYPE_CHECKING:
    from datagouv_eval_pipeline.world.snapshot_builder.build import SourceError, write_snapshot

_MODULE_OF: dict[str, str] = {
    "SourceError": ".build",
    "write_snapshot": ".build",
}
"""Each public name, and the module that defines it."""

if not TYPE_CHECKING:  # hidden from mypy, which then checks each name imported from the face
    __getattr__ = lazy_attributes(__name__, _MODULE_OF)


__all__ = [
    "SourceError",
    "write_snapshot",
]
