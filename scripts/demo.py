"""`make demo`: the offline main job, end to end, in ./demo-workspace (recreated each run)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "demo-workspace"


def kit(*args: str) -> None:
    print(f"\n$ kit {' '.join(args)}", flush=True)
    subprocess.run([sys.executable, "-m", "kit", *args], check=False)


def main() -> int:
    if DEMO.exists():
        shutil.rmtree(DEMO)
    kit("init", str(DEMO))
    kit("doctor", "-w", str(DEMO))
    kit("prompt", "-w", str(DEMO))
    return 0


if __name__ == "__main__":
    sys.exit(main())
