"""Part 4: path-escape attempts through the agent's tools (the real tool pipeline, execute_tool).

Every attempt must be refused: a read must not return the secret placed outside the workspace (or
inside .kit/), a write must not create or change anything outside the workspace, in .kit/, in .git/
or kit.yaml. `..`, absolute paths, `~`, symlinks out, symlinks into .kit/.git, NUL bytes, very
long paths and look-alike names (case, full-width letters, invisible characters) are tried.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

SECRET = "STRESS-SECRET-7f3a9c"


def _setup(folder: Path) -> tuple[Path, Path]:
    from kit.init import init_workspace

    root = folder / "ws"
    init_workspace(root)
    outside = folder / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text(f"- {SECRET}\n")
    subprocess.run(["git", "init", "-q", str(root)], check=True, capture_output=True)
    (root / ".kit").mkdir(exist_ok=True)
    (root / ".kit" / "secret.md").write_text(f"{SECRET}\n")
    (root / "out").symlink_to(outside)
    (root / "kitlink").symlink_to(".kit")
    (root / "gitlink").symlink_to(".git")
    (root / "cfg.yaml").symlink_to("kit.yaml")
    (root / "memory" / "evil.md").symlink_to(outside / "secret.md")
    (root / "memory" / "kitdir").symlink_to("../.kit")
    skill = root / "skills" / "notes"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\nname: notes\ndescription: Take notes\n---\n# Notes\nSee ref.md.\n")
    (skill / "ref.md").symlink_to(outside / "secret.md")
    (skill / "up").symlink_to("../../..")  # skills/notes/up -> the folder above the workspace
    return root, outside


def attempts(outside: Path) -> list[tuple[str, dict]]:
    o = str(outside)
    reads = ["../outside/secret.md", f"{o}/secret.md", "/etc/passwd", "~/.ssh/id_rsa", "out/secret.md",
             "memory/../../outside/secret.md", "a/b/../../../outside/secret.md", "./../outside/secret.md",
             "memory/evil.md", "notes\x00.md", "\x00", "a/" * 700 + "x", "memory/kitdir/../../outside/secret.md",
             "skills/notes/up/outside/secret.md", "skills/notes/ref.md"]
    out = [("read_file", {"path": p}) for p in reads]
    writes = ["../outside/new.md", f"{o}/new.md", "/tmp/kit-stress-escape.md", "out/new.md", "kitlink/y.txt",
              "gitlink/config", ".kit/state.db", ".kit/new.md", ".git/HEAD", "kit.yaml", "./kit.yaml", "cfg.yaml",
              "memory/../kit.yaml", ".kit/../kit.yaml", "memory/kitdir/x.md", "skills/notes/up/outside/new.md",
              "a\x00b.md", ".KIT/x.md", ".Git/config", "\uff0ekit/x.md", "\u200b.kit/x.md", ".kit\u200d/x.md",
              "\uff0e\uff0e/outside/new.md", "b/" * 700 + "x.md", "~/x.md"]
    out += [("write_file", {"path": p, "content": f"written by an escape {SECRET}"}) for p in writes]
    out += [("edit_file", {"path": p, "old_text": "a", "new_text": "b"}) for p in
            ["../outside/secret.md", "out/secret.md", "kitlink/secret.md", "gitlink/HEAD", "kit.yaml", "cfg.yaml",
             "memory/evil.md", "\x00"]]
    out += [("memory_get", {"path": p}) for p in
            ["../outside/secret.md", f"{o}/secret.md", "memory/../../outside/secret.md", "memory/evil.md",
             "kit.yaml", ".kit/secret.md", "memory/\x00.md", "memory/kitdir/secret.md", "MEMORY.md/../kit.yaml"]]
    out += [("skill_view", a) for a in
            [{"name": "../notes"}, {"name": "notes", "path": "../../kit.yaml"}, {"name": "notes", "path": "/etc/passwd"},
             {"name": "notes", "path": "ref.md"}, {"name": "notes", "path": "up/outside/secret.md"},
             {"name": "notes", "path": "scripts/../../../outside/secret.md"}, {"name": "notes", "path": "x\x00"},
             {"name": "/etc"}]]
    return out


def _fingerprint(*folders: Path) -> dict[str, str]:
    out = {}
    for folder in folders:
        for p in sorted(folder.rglob("*")):
            if p.is_file() and not p.is_symlink() and not p.name.endswith(("-wal", "-shm")):
                out[str(p)] = hashlib.sha1(p.read_bytes()).hexdigest()
    return out


def run() -> dict:
    from kit.tools import ToolContext, execute_tool
    from kit.workspace import Workspace

    folder = Path(tempfile.mkdtemp(prefix="kit-stress-escape-"))
    old_home = os.environ.get("HOME")
    os.environ["HOME"] = str(folder / "home")
    try:
        root, outside = _setup(folder)
        ws = Workspace.open(root)
        ctx = ToolContext(ws)
        guarded = [outside, root / ".kit", root / ".git", Path("/tmp")]
        total = refused = 0
        escaped: list[str] = []
        for tool, args in attempts(outside):
            before = _fingerprint(outside, root / ".kit", root / ".git")
            config = (root / "kit.yaml").read_bytes()
            result = execute_tool(ctx, tool, args)
            total += 1
            leaked = SECRET in result.result and tool in ("read_file", "memory_get", "skill_view")
            changed = _fingerprint(outside, root / ".kit", root / ".git") != before
            changed |= (root / "kit.yaml").read_bytes() != config
            changed |= Path("/tmp/kit-stress-escape.md").exists() or (folder / "home" / "x.md").exists()
            if leaked or changed or result.ok:
                escaped.append(f"{tool} {json.dumps(args)[:80]} -> {result.result[:120]!r}")
            else:
                refused += 1
        del guarded
        return {"attempts": total, "refused": refused, "escaped": escaped}
    finally:
        if old_home is not None:
            os.environ["HOME"] = old_home
        shutil.rmtree(folder, ignore_errors=True)
        Path("/tmp/kit-stress-escape.md").unlink(missing_ok=True)


if __name__ == "__main__":
    print(json.dumps(run(), indent=1))
