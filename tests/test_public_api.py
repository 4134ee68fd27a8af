"""The public API: `from kit import Workspace, KitError, ...`; the workspace owns its subsystems and
their state, and no module of the engine keeps a cache of its own."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

import kit

ENGINE = Path(kit.__file__).parent

# Module-level caches other branches of issue 9 are removing right now (owner in the value). When
# one lands, this test names it: drop its entry here in the same change.
PENDING: dict[str, set[str]] = {}
# Process-wide by nature: loaded modules (sys.modules) and running threads belong to the process.
PROCESS_WIDE = {"hooks/runner.py": {"_modules", "_abandoned"}}
CONTAINERS = {"dict", "list", "set", "OrderedDict", "WeakKeyDictionary", "WeakValueDictionary",
              "defaultdict", "deque", "Counter"}


def _module_caches(path: Path) -> set[str]:
    """Names bound at module level to an empty mutable container: a cache filled at run time."""
    found = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            targets, value = [node.target], node.value
        else:
            continue
        empty_literal = isinstance(value, ast.Dict | ast.List | ast.Set) and not (
            getattr(value, "keys", None) or getattr(value, "elts", None))
        call = isinstance(value, ast.Call) and getattr(value.func, "id", getattr(value.func, "attr", "")) in CONTAINERS
        if empty_literal or (call and not value.args):
            found.update(t.id for t in targets if isinstance(t, ast.Name))
    return found


def test_no_module_level_caches_in_the_engine():
    found = {}
    for path in sorted(ENGINE.rglob("*.py")):
        names = _module_caches(path)
        if names:
            found[path.relative_to(ENGINE).as_posix()] = names
    allowed = {f: PENDING.get(f, set()) | PROCESS_WIDE.get(f, set()) for f in found}
    unexpected = {f: n - allowed[f] for f, n in found.items() if n - allowed[f]}
    assert unexpected == {}, "state belongs on the workspace (ws.owned) or an object it owns"
    gone = {f: n - found.get(f, set()) for f, n in PENDING.items() if n - found.get(f, set())}
    assert gone == {}, "these caches are gone: remove them from PENDING in this test"


def test_the_module_cache_check_catches_a_cache(tmp_path):
    module = tmp_path / "m.py"
    module.write_text("TABLE = {'a': 1}\n_cache: dict[str, int] = {}\n_seen = set()\nNAMES = ('x',)\n")
    assert _module_caches(module) == {"_cache", "_seen"}


def _untyped_ws(path: Path, root: Path = ENGINE) -> list[str]:
    """`ws` parameters without an annotation: a subsystem takes `ws: WorkspaceCore` (the facade's
    callers `Workspace`), so what it may use of the workspace is stated and checked."""
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            args = node.args
            for arg in [*args.posonlyargs, *args.args, *args.kwonlyargs]:
                if arg.arg == "ws" and arg.annotation is None:
                    out.append(f"{path.relative_to(root).as_posix()}:{node.lineno} {node.name}")
    return out


def test_every_ws_parameter_is_typed(tmp_path):
    assert [hit for path in sorted(ENGINE.rglob("*.py")) for hit in _untyped_ws(path)] == []
    module = tmp_path / "m.py"
    module.write_text("def f(ws, x):\n    pass\n\ndef g(ws: object):\n    pass\n")
    assert _untyped_ws(module, tmp_path) == ["m.py:1 f"]


def test_public_names_resolve_and_match_all():
    assert set(kit.__all__) == set(kit._EXPORTS) | {"__version__"}
    for name in kit._EXPORTS:
        value = getattr(kit, name)
        assert getattr(value, "__name__", name) in (name, "Callable")  # ProgressCallback is an alias
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        kit.nope  # noqa: B018


def test_import_kit_is_light():
    code = ("import sys, kit; from kit import KitError; "
            "print(sorted(m for m in sys.modules if m.startswith('kit')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "['kit', 'kit.errors', 'kit.problems']"


def test_the_workspace_holds_its_subsystems(workspace):
    from kit import (
        Agent,
        HookRegistry,
        KitError,
        Memory,
        PromptResult,
        SessionStore,
        SkillCatalog,
        Watcher,
        Workspace,
    )

    assert isinstance(workspace, Workspace)
    assert isinstance(workspace.memory, Memory) and workspace.memory is workspace.memory
    assert isinstance(workspace.sessions, SessionStore) and workspace.sessions is workspace.sessions
    assert isinstance(workspace.skills, SkillCatalog) and isinstance(workspace.hooks, HookRegistry)
    prompt = workspace.prompt("default")
    assert isinstance(prompt, PromptResult) and "SOUL.md" in [f.name for f in prompt.files]
    assert workspace.doctor() == [f for f in workspace.doctor()]  # read-only, repeatable
    watcher = workspace.watch(backend="polling")
    assert isinstance(watcher, Watcher) and not watcher.running
    assert issubclass(KitError, Exception)
    agent = workspace.agent(model="script:" + str(_script(workspace.root)))
    try:
        assert isinstance(agent, Agent)
        assert agent.turn("hi").reply == "hello from the script"
        # the agent writes through the workspace's one session store (one write lock for all)
        assert agent.store is workspace.sessions
        assert workspace.sessions.get(agent.session_id).messages == 2
    finally:
        agent.close()
    other = Workspace.open(workspace.root)
    assert other.memory is not workspace.memory  # state lives on the workspace object, not the module


def test_script_positions_belong_to_the_workspace(workspace):
    from kit import Workspace

    script = _script(workspace.root)
    first = workspace.agent(model=f"script:{script}")
    try:
        assert first.turn("hi").reply == "hello from the script"
    finally:
        first.close()
    with Workspace.open(workspace.root) as fresh:  # a new workspace plays the script from turn 1
        again = fresh.agent(model=f"script:{script}")
        try:
            assert again.turn("hi").reply == "hello from the script"
        finally:
            again.close()


def test_last_valid_skills_are_per_workspace_and_bounded(workspace):
    from kit import Workspace

    folder = workspace.root / "skills" / "tea"
    folder.mkdir(parents=True)
    good = "---\nname: tea\ndescription: Brew tea the right way.\n---\n# Tea\n"
    (folder / "SKILL.md").write_text(good)
    workspace.reload()
    assert workspace.skills.get("tea").description == "Brew tea the right way."
    (folder / "SKILL.md").write_text("---\nname: Tea Time!\ndescription: Brew tea.\n---\n# Tea\n")
    workspace.reload()
    assert workspace.skills.get("tea").description == "Brew tea the right way."  # last valid kept
    memo = workspace.owned("skills.last_valid", lambda: None)
    assert len(memo) == 1
    with Workspace.open(workspace.root) as fresh:  # another workspace has no memory of the good one
        assert "tea" not in fresh.skills.skills
    (folder / "SKILL.md").unlink()
    folder.rmdir()
    workspace.reload()
    assert "tea" not in workspace.skills.skills
    assert len(memo) == 0  # a deleted skill is forgotten: the memo never outgrows the workspace


def _script(root: Path) -> Path:
    path = root / "hello.yaml"
    path.write_text("turns:\n  - text: hello from the script\n")
    return path
