"""An emulation of the official ``datagouv`` CLI (datagouv-cli 0.4.2) on ``datagouv-client``.

The official CLI is not on PyPI; the ``datagouv-cli`` capability runs this command instead. It has
the same command tree, arguments, options and outputs (reference ``datagouv-toolsets.md`` §3) and
calls the same library methods, so requests and failures match. ``docs/datagouv-cli.md`` lists the
environment variables that point it at the twin (``DATAGOUV_CLI_BASE_URL``) and what differs.

Run it as ``datagouv …`` (console script) or
``python -m datagouv_eval_pipeline.world.datagouv_cli``.
"""

from datagouv_eval_pipeline.world.datagouv_cli.app import app, main, version_text
from datagouv_eval_pipeline.world.datagouv_cli.config import (
    BASE_URL_ENV,
    CLI_VERSION,
    RETRY_WAIT_ENV,
    user_agent,
)

__all__ = [
    "BASE_URL_ENV",
    "CLI_VERSION",
    "RETRY_WAIT_ENV",
    "app",
    "main",
    "user_agent",
    "version_text",
]
