"""Any input, one clear line (issue 12, deliver 6): bounded YAML, regular files only, tool paths.

Each case was a traceback or a hang before: it must now be one problem naming the file (and line),
with the last good version kept in force.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import run_kit
from kit.errors import ConfigError, DocumentError
from kit.workspace import Workspace

BOMB = "".join(f"{a}: &{a} [{', '.join([f'*{p}'] * 9)}]\n" for p, a in zip("abcdefgh", "bcdefghi", strict=True))
BOMB = 'a: &a ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]\n' + BOMB


def issue_for(ws: Workspace, rel: str):
    found = [i for i in ws.snapshot.issues if i.path == rel]
    assert found, ws.snapshot.issues
    return found[0]


def skill(root: Path, name: str, frontmatter: str) -> Path:
    folder = root / "skills" / name
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "SKILL.md"
    path.write_text(f"---\n{frontmatter}\n---\nBody.\n", encoding="utf-8")
    return path


# --------------------------------------------------------------------------- YAML


@pytest.mark.parametrize(("frontmatter", "line", "message"), [
    ("name: x\ndescription: y\nmeta: " + "[" * 1500 + "]" * 1500, 4, "nested more than 64 levels deep"),
    ('name: "\\ud800\\udfff"\ndescription: y', 2, "U+D800 in a string: a UTF-16 surrogate"),
    ("name: x\ndescription: y\nsize: " + "9" * 5000, 4, "an integer with 5,000 digits"),
    ("name: x\ndescription: y\ncreated: 2026-13-45", 4, "invalid timestamp value '2026-13-45'"),
    ("name: x\ndescription: y\nloop: &a [*a]", 4, "recursive alias *a"),
    ("name: x\ndescription: y\n" + BOMB.strip(), 8, "too many values"),  # 9**5 values by line 8
    ("name: x\ndescription: y\nblob: " + "x" * 150_000, 4, "a string of 150,000 characters"),
])
def test_frontmatter_that_crashed_or_hung_is_one_problem_with_its_line(ws_path, frontmatter, line, message):
    """Regressions: RecursionError, UnboundLocalError in Kit's own error path (surrogates),
    ValueError (5,000 digits, a month 13), a self-referencing list, an alias bomb."""
    skill(ws_path, "bad", frontmatter)
    ws = Workspace.open(ws_path)
    problem = issue_for(ws, "skills/bad/SKILL.md")
    assert problem.line == line and message in problem.message, problem
    assert "bad" not in ws.skills.skills


def test_a_surrogate_pair_escape_says_how_to_write_the_character(ws_path):
    skill(ws_path, "emoji", 'name: emoji\ndescription: "smile \\ud83d\\ude00"')
    problem = issue_for(Workspace.open(ws_path), "skills/emoji/SKILL.md")
    assert "for U+1F600 write \\U0001F600 or the character itself" in problem.message


def test_kit_yaml_alias_bomb_and_huge_integer_keep_the_last_good_config(ws_path):
    (ws_path / "kit.yaml").write_text("agent:\n  max_iterations: 7\n")
    ws = Workspace.open(ws_path)
    assert ws.config.get("agent.max_iterations") == 7
    (ws_path / "kit.yaml").write_text(BOMB + "agent:\n  fallbacks: *i\n")
    ws.reload(["kit.yaml"])
    problem = issue_for(ws, "kit.yaml")
    assert "too many values" in problem.message and problem.line is not None
    assert ws.config.get("agent.max_iterations") == 7  # last good version in force
    (ws_path / "kit.yaml").write_text("agent:\n  max_iterations: " + "9" * 5000 + "\n")
    ws.reload(["kit.yaml"])
    problem = issue_for(ws, "kit.yaml")
    assert (problem.line, "5,000 digits" in problem.message) == (2, True)
    assert ws.config.get("agent.max_iterations") == 7


def test_kit_yaml_env_values_are_bounded_too(ws_path, monkeypatch):
    monkeypatch.setenv("KIT_AGENT__FALLBACKS", "[" * 5000)
    monkeypatch.setenv("KIT_AGENT__MAX_ITERATIONS", "9" * 5000)
    ws = Workspace.open(ws_path)  # no hang, no ValueError: unparseable YAML is taken as the text itself
    assert ws.config.get("agent.fallbacks") == ["[" * 5000]
    problem = issue_for(ws, "environment variable KIT_AGENT__MAX_ITERATIONS")
    assert "must be an integer" in problem.message


# --------------------------------------------------------------------------- not regular files


def test_fifo_bootstrap_files_are_refused_without_blocking(ws_path):
    """Regression: SOUL.md or MEMORY.md as a FIFO blocked every command forever."""
    for name in ("SOUL.md", "MEMORY.md"):
        (ws_path / name).unlink()
        os.mkfifo(ws_path / name)
    ws = Workspace.open(ws_path)
    for name in ("SOUL.md", "MEMORY.md"):
        assert issue_for(ws, name).message == "is a FIFO (named pipe), expected a regular file; not read"
    prompt = run_kit("prompt", "-w", ws_path, timeout=60)
    assert prompt.returncode == 0 and "SOUL.md: is a FIFO (named pipe)" in prompt.stderr
    dream = run_kit("dream", "-w", ws_path, timeout=60)
    assert dream.returncode == 1
    assert dream.stderr.strip().splitlines()[-1] == \
        "kit: MEMORY.md: is a FIFO (named pipe), expected a regular file; not read"
    index = run_kit("memory", "index", "-w", ws_path, timeout=60, env={"KIT_MEMORY__EMBEDDING__MODEL": "no-such-model"})
    assert "MEMORY.md: is a FIFO (named pipe), expected a regular file; not indexed" in index.stdout + index.stderr


def test_a_symlink_loop_is_named(ws_path):
    """Regression: SOUL.md as a symlink to itself was a RuntimeError traceback."""
    (ws_path / "SOUL.md").unlink()
    (ws_path / "SOUL.md").symlink_to("SOUL.md")
    ws = Workspace.open(ws_path)
    assert "symlink loop" in issue_for(ws, "SOUL.md").message
    out = run_kit("prompt", "-w", ws_path, timeout=60)
    assert out.returncode == 0 and "Traceback" not in out.stderr and "SOUL.md: symlink loop" in out.stderr


def test_kit_yaml_linked_to_dev_zero_is_refused_at_once(ws_path):
    """Regression: kit.yaml -> /dev/zero read forever."""
    (ws_path / "kit.yaml").unlink()
    (ws_path / "kit.yaml").symlink_to("/dev/zero")
    out = run_kit("prompt", "-w", ws_path, timeout=60)
    assert out.returncode == 0
    assert "kit.yaml: is a character device, expected a regular file; not read" in out.stderr
    with pytest.raises(ConfigError, match="character device"):
        from kit.config import load_config

        load_config(ws_path)


def test_a_kit_yaml_that_is_no_regular_file_is_found_and_named_without_w(ws_path):
    """Regression (new-user walkthrough): without -w, kit.yaml -> /dev/zero or a kit.yaml symlink
    loop was 'no workspace found' instead of the one line naming the file."""
    from kit.core import find_workspace

    (ws_path / "kit.yaml").unlink()
    (ws_path / "kit.yaml").symlink_to("/dev/zero")
    assert find_workspace(ws_path / "memory") == ws_path.resolve()
    out = run_kit("prompt", cwd=ws_path, env={"KIT_WORKSPACE": ""}, timeout=60)
    assert "no workspace found" not in out.stderr
    assert "kit.yaml: is a character device, expected a regular file; not read" in out.stderr
    (ws_path / "kit.yaml").unlink()
    (ws_path / "kit.yaml").symlink_to("kit.yaml")
    out = run_kit("prompt", cwd=ws_path, env={"KIT_WORKSPACE": ""}, timeout=60)
    assert "no workspace found" not in out.stderr and "kit.yaml: symlink loop" in out.stderr


def test_a_fifo_in_a_hook_folder_does_not_block_loading_hooks(ws_path):
    folder = ws_path / "hooks" / "logger"
    folder.mkdir(parents=True)
    (folder / "HOOK.md").write_text("---\nname: logger\ndescription: logs\nevents: [memory:write]\n"
                                    "command: echo hi\n---\n")
    os.mkfifo(folder / "pipe")
    out = run_kit("hooks", "list", "-w", ws_path, timeout=60)
    assert out.returncode == 0 and "logger" in out.stdout


def test_read_text_refuses_devices_and_reports_missing_link_targets(tmp_path):
    from kit.fsutil import read_text

    with pytest.raises(DocumentError, match="is a character device"):
        read_text("/dev/zero")
    (tmp_path / "gone.md").symlink_to("nowhere.md")
    with pytest.raises(DocumentError, match=r"symlink to a missing file \(nowhere.md\)"):
        read_text(tmp_path / "gone.md")


def test_a_garbled_session_transcript_still_loads(workspace):
    from kit.agent.sessions import SessionStore

    store = SessionStore(workspace)
    info = store.create("k")
    path = store.transcript_path(info.id)
    path.write_bytes(b'{"role": "user", "content": "hi"}\n[1, 2]\n"text"\n\xff\xfe\n{"n": '
                     + b"9" * 5000 + b'}\n' + b"[" * 100_000 + b"\n"
                     + b'{"kind": "compaction", "mode": "summary", "dropped": "x", "role": "user"}\n')
    lines = store.transcript(info.id)
    assert lines[0]["content"] == "hi"
    assert [ln["content"] for ln in lines[1:6]] == [f"[unreadable line {n}]" for n in (2, 3, 4, 5, 6)]
    assert store.load_messages(info.id)[0] == {"role": "user", "content": "hi"}
    store.close()


# --------------------------------------------------------------------------- script provider files


@pytest.mark.parametrize(("body", "message"), [
    ("turns:\n  - text: ok\n  - tool_calls: {name: x}\n", "turn 2 `tool_calls` must be a list"),
    ("turns:\n  - tool_calls: [{name: x, arguments: [1]}]\n", "turn 1 tool call 1: `arguments` must be a mapping"),
    ("turns:\n  - text: ok\n    usage: {prompt_tokens: lots}\n", "turn 1 `usage.prompt_tokens` must be a whole number"),
    ("turns:\n  - text: ok\n  - text: ok\n    delay_s: soon\n", "turn 2 `delay_s` must be a number"),  # ValueError mid-run
    # regressions (a new-user pass): -5 is a whole number; an unknown kind surfaced as `kit: x` mid-run
    ("turns:\n  - text: ok\n    usage: {prompt_tokens: -5}\n", "turn 1 `usage.prompt_tokens` must be a whole number, 0 or more"),
    ("turns:\n  - text: ok\n  - error: {kind: nonsense, message: x}\n",
     "turn 2 `error.kind` 'nonsense' is not one of auth, auth_permanent,"),
    ("turns: [" + "[" * 3000 + "\n", "brackets nested more than 64 levels deep"),
])
def test_script_provider_files_are_validated_with_their_line(tmp_path, body, message):
    from kit.providers.script import ScriptProvider

    script = tmp_path / "s.yaml"
    script.write_text(body)
    with pytest.raises(ConfigError, match=message) as caught:
        ScriptProvider(script)
    assert caught.value.line is not None and caught.value.path == str(script)


# --------------------------------------------------------------------------- tool paths


def test_nul_bytes_and_symlinked_routes_into_kit_are_refused(workspace):
    """Regressions: a NUL byte came back as a raw ValueError; a symlink pointing at .kit let
    write_file link/y.txt write into .kit/."""
    from kit.tools import ToolContext, execute_tool

    ctx = ToolContext(workspace)
    (workspace.root / ".kit").mkdir(exist_ok=True)
    (workspace.root / "link").symlink_to(".kit")
    (workspace.root / "g").symlink_to(".git")
    out = execute_tool(ctx, "write_file", {"path": "link/y.txt", "content": "x"})
    assert not out.ok and "leads into .kit/ through a symlink" in out.result
    assert not (workspace.root / ".kit" / "y.txt").exists()
    out = execute_tool(ctx, "edit_file", {"path": "g/config", "old_text": "a", "new_text": "b"})
    assert not out.ok and "leads into .git/ through a symlink" in out.result
    for tool, args in (("read_file", {"path": "notes\x00.md"}), ("write_file", {"path": "a\x00b", "content": "x"})):
        out = execute_tool(ctx, tool, args)
        assert out.result == "error: a NUL byte is not allowed in a path: " + args["path"].replace("\x00", "\\0")
    out = execute_tool(ctx, "write_file", {"path": ".KIT/x", "content": "x"})  # a look-alike on case-folding disks
    assert not out.ok and ".KIT/ holds machine state" in out.result
    out = execute_tool(ctx, "read_file", {"path": "a/" * 600 + "x"})
    assert not out.ok and "over the 1024-character limit" in out.result


def test_a_fifo_named_by_a_tool_is_refused_not_read(workspace):
    from kit.tools import ToolContext, execute_tool

    os.mkfifo(workspace.root / "pipe.md")
    code = ("import sys; from kit.workspace import Workspace; from kit.tools import ToolContext, execute_tool\n"
            "ws = Workspace.open(sys.argv[1]); print(execute_tool(ToolContext(ws), 'read_file', {'path': 'pipe.md'}).result)")
    out = subprocess.run([sys.executable, "-c", code, str(workspace.root)], capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "error: pipe.md: is a FIFO (named pipe), expected a regular file; not read"
    assert not execute_tool(ToolContext(workspace), "write_file", {"path": "pipe.md", "content": "x"}).ok


def test_memory_get_through_a_symlink_must_land_on_a_memory_file(workspace):
    """Regression (found by bench/stress escapes): memory/kitdir -> ../.kit let memory_get read
    .kit/ files, although it only serves memory files."""
    from kit.tools import ToolContext, execute_tool

    (workspace.root / ".kit").mkdir(exist_ok=True)
    (workspace.root / ".kit" / "secret.md").write_text("not memory\n")
    (workspace.root / "memory" / "kitdir").symlink_to("../.kit")
    out = execute_tool(ToolContext(workspace), "memory_get", {"path": "memory/kitdir/secret.md"})
    assert not out.ok and out.result == ("error: memory/kitdir/secret.md leads to .kit/secret.md (a symlink), "
                                         "which is not a memory file")
    (workspace.root / "memory" / "2026-05-01.md").write_text("- a fact\n")
    (workspace.root / "memory" / "alias.md").symlink_to("2026-05-01.md")  # one memory file to another: fine
    assert execute_tool(ToolContext(workspace), "memory_get", {"path": "memory/alias.md"}).result == "- a fact"


def test_dot_dot_written_with_look_alike_characters_is_refused(workspace):
    """Regression (found by bench/stress escapes): full-width '．．' made a folder named like '..'."""
    from kit.tools import ToolContext, execute_tool

    out = execute_tool(ToolContext(workspace), "write_file", {"path": "\uff0e\uff0e/x.md", "content": "x"})
    assert not out.ok and "'..' written with look-alike characters is not allowed" in out.result
    assert not (workspace.root / "\uff0e\uff0e").exists()


def test_a_huge_hex_integer_in_kit_yaml_is_refused_not_a_json_crash(ws_path, cli):
    """Regression (found by bench/stress malformed): 0x + 20,000 hex digits passed the digit check
    and `kit config show --json` died in json.dumps."""
    (ws_path / "kit.yaml").write_text("agent:\n  max_iterations: 0x" + "f" * 20_000 + "\n")
    result = cli("config", "show", "--json", "-w", ws_path)
    assert "kit.yaml:2: invalid YAML: an integer of about 24,082 digits (over the 4,300-digit limit)" in result.output


@pytest.mark.parametrize(("source", "message"), [
    ("{% for i in range(10**9) %}x{% endfor %}", "range of 1,000,000,000 items is over the 10,000-item limit"),
    ("{{ 'x' * 10**10 }}", "repeating str 10,000,000,000 times is over the 1,000,000-item limit"),
    ("{% for a in range(10000) %}{% for b in range(10000) %}{% for c in range(10000) %}{% endfor %}"
     "{% endfor %}{% endfor %}", "rendering took over 0.5 s"),  # 10**12 steps: never done in time
    ("{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}", "maximum recursion depth exceeded"),
    ("{{ ''.__class__.__mro__ }}", "access to attribute '__class__' of 'str' object is unsafe"),
    # found by a fuzz pass: padding built its whole string (0.4 to 1 GB) before the output cap saw it
    ("{{ ('\t' * 10).expandtabs(100000000) }}",
     "str.expandtabs(100,000,000) would build over the 1,000,000-character limit"),
    ("{{ 'x'.zfill(400000000) }}", "str.zfill(400,000,000) would build over the 1,000,000-character limit"),
    ("{{ 'x'['rjust'](400000000) }}", "str.rjust(400,000,000) would build over the 1,000,000-character limit"),
    ("{{ '%100000000s' % 'x' }}", "a %-format width over the 1,000,000-character limit"),
    ("{{ '%*d' % (100000000, 1) }}", "a %-format width over the 1,000,000-character limit"),
    ("{{ '%.100000000f'|format(1.0) }}", "a %-format width over the 1,000,000-character limit"),
    ("{{ '{:>100000000}'.format('x') }}", "a format width over the 1,000,000-character limit"),
    ("{{ '{:{}}'.format('x', 100000000) }}", "a format width over the 1,000,000-character limit"),
    ("{{ 'x'|center(400000000) }}", "center(400,000,000) would build over the 1,000,000-character limit"),
    ("{{ 'a'|indent(100000000) }}", "indent(100,000,000) would build over the 1,000,000-character limit"),
    ("{{ lipsum(1000000) }}", "lipsum(1,000,000) is over the 1,000,000-character limit"),
    # found by review: widths given as text or inside an argument, and the other string builders
    ("{{ '{:{}}'.format('x', '50000000') }}", "a format width over the 1,000,000-character limit"),
    ("{{ '{0[0]:{0[1]}}'.format(['x', 50000000]) }}", "a format width over the 1,000,000-character limit"),
    ("{{ '{a:{w}}'.format_map({'w': '50000000'}) }}", "a format width over the 1,000,000-character limit"),
    ("{{ ('\\n' * 50)|indent('x' * 1000000, blank=True) }}", "indent(…) would build over the 1,000,000-character limit"),
    ("{{ ('x' * 1000).replace('x', 'y' * 50000) }}", "str.replace(…) would build over the 1,000,000-character limit"),
    ("{{ ('x' * 1000000).join('a' * 50) }}", "str.join(…) would build over the 1,000,000-character limit"),
    ("{{ (['x' * 1000] * 50000)|join }}", "join would build over the 1,000,000-character limit"),
    ("{{ ('x' * 1000).translate({120: 'y' * 50000}) }}", "str.translate(…) would build over the 1,000,000-character limit"),
])
def test_a_workspace_template_that_would_never_end_falls_back_with_one_line(workspace, monkeypatch, source, message):
    """Regressions (found by bench/stress malformed): templates/system.md.j2 with a huge loop or a
    huge repeat hung `kit prompt` (and every run) for good."""
    from kit import jinja_bounds

    monkeypatch.setattr(jinja_bounds, "RENDER_SECONDS", 0.5)  # the limit is 5 s; the mechanism is the same
    (workspace.root / "templates").mkdir(exist_ok=True)
    (workspace.root / "templates" / "system.md.j2").write_text(source)
    workspace.reload(["templates/system.md.j2"])
    result = workspace.prompt()
    assert result.template == "builtin"
    assert result.template_issue.path == "templates/system.md.j2" and result.template_issue.line == 1
    assert message in result.template_issue.message


def test_bounded_padding_still_pads():
    """The width checks leave ordinary padding as it was."""
    import jinja2

    from kit.jinja_bounds import environment, render

    env = environment(undefined=jinja2.StrictUndefined)
    source = ("{{ 'ab'.center(6) }}|{{ '%3s' % 'x' }}|{{ '{:>3}'.format(1) }}|{{ 'x'|center(3) }}|"
              "{{ 'a\nb'|indent(2) }}|{{ '%s-%s'|format(1, 2) }}|{{ '\tx'.expandtabs(2) }}|{{ 7 % 3 }}|"
              "{{ '%%5000000s %s' % 'x' }}|{{ 'a-b'.replace('-', '+') }}|{{ ', '.join(['a', 'b']) }}|"
              "{{ users|join(', ', attribute='n') }}|{{ 'ab'.translate({97: 'z'}) }}|{{ 'x'|indent('> ', first=True) }}")
    assert render(env.from_string(source), {"users": [{"n": "ada"}, {"n": "ben"}]}) == (
        "  ab  |  x|  1| x |a\n  b|1-2|  x|1|%5000000s x|a+b|a, b|ada, ben|zb|> x")


def test_a_memory_file_of_150000_bullets_is_refused_with_one_line(workspace, monkeypatch):
    """Regression (found by bench/stress malformed): chunking it took minutes."""
    monkeypatch.setenv("KIT_MEMORY__EMBEDDING__MODEL", "no-such-model")
    (workspace.root / "memory" / "2026-05-01.md").write_text("# 2026-05-01\n\n" + "- line\n" * 150_000)
    (workspace.root / "memory" / "2026-05-02.md").write_text("# 2026-05-02\n\n- " + "[" * 200_000 + "\n")
    result = Workspace.open(workspace.root).memory.sync()
    assert result.errors == ("memory/2026-05-01.md: 150,002 lines, over the 20,000-line limit for one memory "
                             "file; split it (the last indexed version stays searchable)",)
    assert "memory/2026-05-02.md" in result.added  # 200 KB of '[' is chunked in well under a second now


def test_a_script_file_that_is_a_symlink_loop_is_a_config_error(tmp_path):
    from kit.providers.script import ScriptProvider

    (tmp_path / "s.yaml").symlink_to("s.yaml")
    with pytest.raises(ConfigError, match="symlink loop"):
        ScriptProvider(tmp_path / "s.yaml")


def _multiline_patterns_with_a_spanning_indent() -> list[str]:
    """Every re.compile / lazy / _r call in the engine whose flags hold re.M and whose pattern text
    has `^\\s*`: under MULTILINE that tries every line start and runs on over all the blank lines
    after it, so a file of blank lines is quadratic (a 100 KB HEARTBEAT.md held `kit prompt` for
    five minutes). A line's own indent is `^[^\\S\\n]*`."""
    import ast

    import kit

    engine = Path(kit.__file__).parent
    found = []
    for path in sorted(engine.rglob("*.py")):
        source = path.read_text(encoding="utf-8")
        tree = ast.parse(source)
        in_calls: set[int] = set()  # string constants inside a compiling call, by id
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            strings = [n for n in ast.walk(node) if isinstance(n, ast.Constant) and isinstance(n.value, str)]
            in_calls.update(id(n) for n in strings)
            names = {n.attr for n in ast.walk(node) if isinstance(n, ast.Attribute)}
            if names & {"M", "MULTILINE"} and "^\\s*" in "".join(n.value for n in strings):
                found.append(f"{path.relative_to(engine)}:{node.lineno}")
        if "MULTILINE" not in source and "re.M" not in source and "(?m)" not in source:
            continue
        # a pattern fragment kept in a name and put together later (threats._LINE went into every
        # rule compiled with MULTILINE): in such a module, any `^\s*` outside a compiling call
        found += [f"{path.relative_to(engine)}:{n.lineno}" for n in ast.walk(tree)
                  if isinstance(n, ast.Constant) and isinstance(n.value, str) and "^\\s*" in n.value
                  and id(n) not in in_calls]
    return found


def test_no_multiline_pattern_runs_an_indent_across_lines():
    assert _multiline_patterns_with_a_spanning_indent() == []


def test_a_heartbeat_of_blank_lines_is_empty_and_every_line_start_pattern_keeps_its_meaning():
    """The patterns that were quadratic (`^\\s*` under MULTILINE) say what they said before."""
    from kit.cli.live import MARKDOWN_SYNTAX
    from kit.dreaming.junk import junk_rule
    from kit.memory.recall import normalise_claim
    from kit.prompt.builder import heartbeat_is_empty

    assert heartbeat_is_empty("\n" * 100_000)
    assert heartbeat_is_empty("# Heartbeat\n\n  ## Daily\n\n<!-- nothing yet -->\n")
    assert not heartbeat_is_empty("# Heartbeat\n\n\n- check the inbox\n")
    assert not heartbeat_is_empty("#\n- check the inbox\n")  # a bare "#" is no title for the task under it
    assert normalise_claim("\n\n  - [x] Ship it\n\n1. Then rest") == "ship it then rest"
    assert junk_rule("Run this:\n\n  ```\nmake deploy\n  ```").rule == "code"
    assert MARKDOWN_SYNTAX.search("plain\n\n  - item") and not MARKDOWN_SYNTAX.search("plain\n\nwords")
