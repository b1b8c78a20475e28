"""CPU time of loading the Dagster code location, each measurement in a new process.

Usage: python3 -m uv run python bench/bench_code_location.py [ROUNDS]   (default 3)

Three measurements, best and median over ROUNDS fresh interpreters: the CPU time of the process
(user + system, which other work on the machine inflates less) and its wall time, with the
1-minute load average before and after:

* ``import dagster``: the floor, what any code location pays;
* ``import definitions``: importing ``datagouv_eval_pipeline.definitions`` (nothing is built);
* ``build definitions``: calling ``defs()`` as Dagster does when it loads the location.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time

CASES = {
    "import dagster": "import dagster",
    "import definitions": "import datagouv_eval_pipeline.definitions",
    # Before the @dg.definitions function, importing the module built them.
    "build definitions": (
        "from datagouv_eval_pipeline.definitions import defs\n"
        "_ = defs() if callable(defs) else defs"
    ),
}

_MEASURE = """
import resource, warnings
warnings.simplefilter("ignore")
{code}
usage = resource.getrusage(resource.RUSAGE_SELF)
print(usage.ru_utime + usage.ru_stime)
"""


def _run(code: str) -> tuple[float, float]:
    """(CPU, wall) seconds of one fresh interpreter running ``code``."""
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", _MEASURE.format(code=code)],
        capture_output=True,
        text=True,
        check=True,
    )
    wall = time.perf_counter() - started
    return float(done.stdout.strip().splitlines()[-1]), wall


def main() -> None:
    """Print the best and median CPU and wall time of each case, and the load around them."""
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    print(f"load average before: {os.getloadavg()[0]:.1f}")
    for label, code in CASES.items():
        _run(code)  # warm-up: bytecode, the dbt manifest
        runs = [_run(code) for _ in range(rounds)]
        cpu = [c for c, _ in runs]
        wall = [w for _, w in runs]
        print(
            f"{label:20} CPU best {min(cpu):.2f} s, median {statistics.median(cpu):.2f} s; "
            f"wall best {min(wall):.2f} s, median {statistics.median(wall):.2f} s "
            f"({rounds} rounds, load {os.getloadavg()[0]:.1f})"
        )


if __name__ == "__main__":
    main()
