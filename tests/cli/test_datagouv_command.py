"""``uv run datagouv`` reaches the emulated CLI, not datagouv-client's "the CLI has moved" notice.

Both packages install a ``datagouv`` command; ``./dev`` (which ``./dev test`` and ``./dev run``
call first) reinstalls ours when the notice owns the script.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def test_the_datagouv_command_of_the_venv_is_the_emulated_cli() -> None:
    script = Path(sys.executable).parent / "datagouv"
    assert "datagouv_eval_pipeline.world.datagouv_cli" in script.read_text(encoding="utf-8")
    result = subprocess.run(
        [str(script), "--help"], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "has moved" not in result.stdout + result.stderr
    assert "Usage: datagouv" in result.stdout
