"""`make bench`: run every benchmark in bench/ (never part of `make test`)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main() -> int:
    failures = 0
    for script in sorted(HERE.glob("*.py")):
        if script.name == Path(__file__).name or script.name.startswith("_"):
            continue
        print(f"\n=== {script.name} ===", flush=True)
        failures += subprocess.run([sys.executable, str(script)]).returncode != 0
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
