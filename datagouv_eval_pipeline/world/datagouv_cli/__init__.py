"""An emulation of the official ``datagouv`` CLI (datagouv-cli 0.4.2) on ``datagouv-client``.

The official CLI is not on PyPI; the ``datagouv-cli`` capability runs this command instead. It has
the same command tree, arguments, options and outputs (reference ``datagouv-toolsets.md`` §3) and
calls the same library methods, so requests and failures match. ``docs/datagouv-cli.md`` lists the
environment variables that point it at the twin (``DATAGOUV_CLI_BASE_URL``) and what differs.

Run it as ``datagouv …`` (console script) or
``python -m datagouv_eval_pipeline.world.datagouv_cli``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from datagouv_eval_pipeline.world.datagouv_cli.app import app, main, version_text
    from datagouv_eval_pipeline.world.datagouv_cli.config import (
        BASE_URL_ENV,
        CLI_VERSION,
        RETRY_WAIT_ENV,
        user_agent,
    )

_MODULE_OF: dict[str, str] = {
    "BASE_URL_ENV": ".config",
    "CLI_VERSION": ".config",
    "RETRY_WAIT_ENV": ".config",
    "app": ".app",
    "main": ".app",
    "user_agent": ".config",
    "version_text": ".app",
}
"""Each public name, and the module that defines it."""


# Not ``base.faces.lazy_attributes``, unlike the other faces: this package is mounted alone in
# the agents' sandbox (``capabilities.default_sandbox``), where nothing else of the project may be
# importable; an import-linter contract keeps it self-contained.
if not TYPE_CHECKING:  # hidden from mypy, which then checks each name imported from the face

    def __getattr__(name: str) -> Any:
        module = _MODULE_OF.get(name)
        if module is None:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module, __name__), name)
        globals()[name] = value
        return value


__all__ = [
    "BASE_URL_ENV",
    "CLI_VERSION",
    "RETRY_WAIT_ENV",
    "app",
    "main",
    "user_agent",
    "version_text",
]
