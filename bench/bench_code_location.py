"""CPU time of loading the Dagster code location, each measurement in a new process.

Usage: python3 -m uv run python bench/bench_code_location.py [ROUNDS]   (default 3)

Three measurements, best and median over ROUNDS fresh interpreters (CPU time of the process,
user + system, so other work on the machine inflates them less than wall time):

* ``import dagster``: the floor, what any code location pays;
* ``import definitions``: importing ``datagouv_eval_pipeline.definitions`` (nothing is built);
* ``build definitions``: calling ``defs()`` as Dagster does when it loads the location.
"""

from __future__ import annotations

import statistics
import subprocess
import sys

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


def _cpu(code: str) -> float:
    done = subprocess.run(
        [sys.executable, "-c", _MEASURE.format(code=code)],
        capture_output=True,
        text=True,
        check=True,
    )
    return float(done.stdout.strip().splitlines()[-1])


def main() -> None:
    """Print the best and median CPU time of each case."""
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    for label, code in CASES.items():
        _cpu(code)  # warm-up: bytecode, the dbt manifest
        times = [_cpu(code) for _ in range(rounds)]
        print(
            f"{label:20} best {min(times):.2f} s CPU, median {statistics.median(times):.2f} s "
            f"({rounds} rounds)"
        )


if __name__ == "__main__":
    main()
