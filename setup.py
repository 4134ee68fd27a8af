"""Ship the top-level workspace/, skills/ and hooks/ folders inside the wheel.

They live at the repository root (where people look for them) but must be importable
resources of the installed package, so build_py copies them into kit/data/.
"""

import importlib.util
import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).parent
SHIPPED = ("workspace", "skills", "hooks")

def _ignore_list():
    """Kit's one ignore list (engine/kit/ignore.py, a module without imports from Kit), loaded on
    its own: the package is not importable while it is being built."""
    spec = importlib.util.spec_from_file_location("_kit_ignore", ROOT / "engine" / "kit" / "ignore.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return shutil.ignore_patterns(*sorted(module.IGNORED_DIRS), *module.IGNORED_NAMES)


IGNORE = _ignore_list()


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
