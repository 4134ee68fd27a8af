"""`make bench`: run every benchmark in bench/ (never part of `make test`)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
SKIP = {"stress"}
NOT_BENCHES = {"run_all.py", "compare.py"}  # compare.py runs other benches in two trees (make bench-compare)


def main() -> int:
    failures = 0
    # top-level bench/*.py scripts, then suites in folders (bench/<name>/run.py)
    scripts = [s for s in sorted(HERE.glob("*.py"))
               if s.name not in NOT_BENCHES and not s.name.startswith("_")]
    # bench/stress is `make stress` (a correctness stress of many minutes, not a benchmark)
    scripts += sorted(s for s in HERE.glob("*/run.py") if s.parent.name not in SKIP)
    for script in scripts:
        print(f"\n=== {script.relative_to(HERE)} ===", flush=True)
        failures += subprocess.run([sys.executable, str(script)]).returncode != 0
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
