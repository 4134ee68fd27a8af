"""`make bench`: run every benchmark in bench/ (never part of `make test`)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main() -> int:
    failures = 0
    # top-level bench/*.py scripts, then suites in folders (bench/<name>/run.py)
    scripts = [s for s in sorted(HERE.glob("*.py"))
               if s.name != Path(__file__).name and not s.name.startswith("_")]
    scripts += sorted(HERE.glob("*/run.py"))
    for script in scripts:
        print(f"\n=== {script.relative_to(HERE)} ===", flush=True)
        failures += subprocess.run([sys.executable, str(script)]).returncode != 0
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
