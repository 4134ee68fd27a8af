"""Ship the top-level workspace/, skills/ and hooks/ folders inside the wheel.

They live at the repository root (where people look for them) but must be importable
resources of the installed package, so build_py copies them into kit/data/.
"""

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).parent
SHIPPED = ("workspace", "skills", "hooks")
IGNORE = shutil.ignore_patterns("__pycache__", "*.pyc", ".kit", ".git")


class BuildWithData(build_py):
    def run(self) -> None:
        super().run()
        target = Path(self.build_lib) / "kit" / "data"
        for name in SHIPPED:
            dest = target / name
            if dest.exists():
                shutil.rmtree(dest)
            shutil.copytree(ROOT / name, dest, ignore=IGNORE)


setup(cmdclass={"build_py": BuildWithData})
