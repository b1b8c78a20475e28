"""Build time only: regenerate the twin's snapshot from the reviewable ``source/`` files.

Not imported at run time; ``datagouv-eval twin build-snapshot`` runs :mod:`.build`.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from datagouv_eval_pipeline.world.snapshot_builder.build import SourceError, write_snapshot

_MODULE_OF: dict[str, str] = {
    "SourceError": ".build",
    "write_snapshot": ".build",
}
"""Each public name, and the module that defines it."""

if not TYPE_CHECKING:  # hidden from mypy, which then checks each name imported from the face

    def __getattr__(name: str) -> Any:
        """Import the module defining a public name on first use (PEP 562)."""
        module = _MODULE_OF.get(name)
        if module is None:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module, __name__), name)
        globals()[name] = value
        return value


__all__ = [
    "SourceError",
    "write_snapshot",
]
