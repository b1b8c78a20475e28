"""Which modules a piece of code imports, run in a fresh interpreter.

Start-up speed is measured in bench/ (README figures); the tests hold its cause away instead:
the heavy libraries a command or a code-location load must not import.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterable


def modules_after(code: str, watched: Iterable[str]) -> set[str]:
    """The modules of ``watched`` in ``sys.modules`` after running ``code`` in a new process.

    Args:
        code: Python source; it fails the probe (CalledProcessError) if it raises.
        watched: Module names to look for (``"pandas"``, ``"datagouv_eval_pipeline.core.judges"``).
    """
    names = tuple(watched)
    report = f"print('loaded:' + ','.join(m for m in {names!r} if m in sys.modules))"
    probe = f"import sys\n{code}\n{report}\n"
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=300, check=True
    )
    last = done.stdout.strip().splitlines()[-1]
    assert last.startswith("loaded:"), done.stdout
    return {name for name in last.removeprefix("loaded:").split(",") if name}
