"""§9 result truncation: over tools.max_result_chars or 30% of the window → cut, keeping at least
the first 2,000 chars, and the tail instead when it holds an error or traceback."""

from __future__ import annotations

from helpers_agent import set_config
from kit.tools import ToolContext, execute_tool
from kit.tools.truncate import MIN_HEAD_CHARS, result_limit, truncate_result
from kit.workspace import Workspace


def _lines(n: int, prefix: str = "line") -> str:
    return "".join(f"{prefix} {i:06d} ok\n" for i in range(n))


def test_small_result_is_untouched():
    text = _lines(10)
    cut = truncate_result(text, 16000)
    assert cut == type(cut)(text, False, len(text))


def test_100kb_plain_result_keeps_the_head():
    text = _lines(6800)  # 6800 × 15 chars = 102,000 chars
    assert len(text) == 102_000
    cut = truncate_result(text, 16000)
    assert cut.cut and not cut.kept_tail
    assert cut.text.startswith(text[:16000])
    assert "[… 86000 chars cut by Kit: the result had 102000 chars, over the 16000-char limit" in cut.text
    assert "line 006799" not in cut.text


def test_100kb_result_with_traceback_keeps_head_and_error_tail():
    tail = (
        "Traceback (most recent call last):\n"
        '  File "deploy.py", line 12, in <module>\n'
        "ValueError: bad checksum for release 4.2.1\n"
    )
    text = _lines(6800) + tail
    cut = truncate_result(text, 16000)
    assert cut.cut and cut.kept_tail
    head, _, rest = cut.text.partition("\n[… ")
    assert head == text[:MIN_HEAD_CHARS]
    assert cut.text.endswith(tail)
    assert "ValueError: bad checksum for release 4.2.1" in cut.text
    kept_tail = cut.text[cut.text.index("…]\n") + 3:]
    assert kept_tail == text[-(16000 - MIN_HEAD_CHARS):]
    assert "the end (which holds an error) are kept" in cut.text


def test_limit_is_the_smaller_of_config_and_30_percent_of_window():
    text = "x" * 200_000  # 60,000 estimated tokens
    # window 32,000 tokens → 30% = 9,600 tokens ≈ 32,000 latin chars; config 16,000 is smaller
    assert result_limit(text, 16000, 32000) == 16000
    # window 10,000 → 3,000 tokens → 10,000 chars, smaller than the config
    assert result_limit(text, 16000, 10000) == 10000
    # never below the 2,000-char head
    assert result_limit(text, 16000, 1000) == MIN_HEAD_CHARS
    # CJK text costs one token per char, so the same window allows fewer chars
    cjk = "记" * 50_000
    assert result_limit(cjk, 16000, 10000) == 2500


def test_tool_result_through_execute_tool_is_cut(ws_path):
    set_config(ws_path, "tools:\n  max_result_chars: 5000\n  exec: {mode: allow}\n")
    ws = Workspace.open(ws_path)
    (ws.root / "big.txt").write_text(_lines(6000))
    out = execute_tool(ToolContext(ws), "read_file", {"path": "big.txt"})
    assert out.ok and out.truncated
    assert out.result.startswith("line 000000 ok\n")
    assert len(out.result) < 5300
    assert "over the 5000-char limit" in out.result

    out = execute_tool(ToolContext(ws), "exec",
                       {"command": "python3 -c \"print('y'*100000); raise SystemExit('fatal: disk full')\""})
    assert out.truncated
    assert out.result.startswith("exit_code: 1\n--- stdout ---\nyyy")
    assert out.result.endswith("--- stderr ---\nfatal: disk full")


SEQ = "seq 1 6000"  # a real command whose 28,893-char output is cut at 5,000


def _saved(ws) -> list:
    return sorted(p.relative_to(ws.root).as_posix() for p in (ws.root / ".kit" / "tool-output").rglob("*")
                  if p.is_file())


def test_a_cut_output_is_saved_and_the_model_can_read_it_back(ws_path):
    set_config(ws_path, "tools:\n  max_result_chars: 5000\n  exec: {mode: allow}\n")
    ws = Workspace.open(ws_path)
    ctx = ToolContext(ws, session_id="20260507-090000-abc123")
    out = execute_tool(ctx, "exec", {"command": SEQ}, call_id="call_1_1")
    rel = ".kit/tool-output/20260507-090000-abc123/call_1_1.txt"
    assert out.truncated and _saved(ws) == [rel]
    assert out.result.endswith(f"; the whole output is saved in {rel} (read_file with start/lines reads any part) …]")
    whole = (ws.root / rel).read_text()
    assert whole == "exit_code: 0\n--- stdout ---\n" + "\n".join(str(n) for n in range(1, 6001))
    # read back in parts with the model's own tool; a cut of the saved file is not saved again
    part = execute_tool(ctx, "read_file", {"path": rel, "start": 5002, "lines": 2}, call_id="call_2_1")
    assert part.ok and part.result == "5000\n5001\n"
    again = execute_tool(ctx, "read_file", {"path": rel}, call_id="call_3_1")
    assert again.truncated and again.result.endswith(f"; read_file {rel} with start/lines reads the rest …]")
    assert _saved(ws) == [rel]
    # the same call id again in this session (a provider's reused id) keeps the first output
    other = execute_tool(ctx, "exec", {"command": "seq 2 6001"}, call_id="call_1_1")
    assert len(_saved(ws)) == 2 and rel in _saved(ws) and (ws.root / rel).read_text() == whole
    assert other.result.endswith(" (read_file with start/lines reads any part) …]")


def test_a_cut_file_read_is_not_copied_the_file_itself_is_read_again(ws_path):
    set_config(ws_path, "tools:\n  max_result_chars: 5000\n")
    ws = Workspace.open(ws_path)
    (ws.root / "big.txt").write_text(_lines(6000))
    out = execute_tool(ToolContext(ws, session_id="s1"), "read_file", {"path": "big.txt"}, call_id="c1")
    assert out.truncated and out.result.endswith("; read_file big.txt with start/lines reads the rest …]")
    assert not (ws.root / ".kit" / "tool-output").exists()


def test_no_read_file_no_saved_output(ws_path):
    """An MCP client of `kit mcp serve` has no read_file: nothing is saved, the cut says to narrow."""
    from kit.mcp_server.tools import served_tools

    set_config(ws_path, "tools:\n  max_result_chars: 2000\n")
    ws = Workspace.open(ws_path)
    (ws.root / "MEMORY.md").write_text("# Memory\n\n" + _lines(400, "- fact"))
    ws.reload()
    out = execute_tool(ToolContext(ws, tools=served_tools(), origin="mcp"), "memory_get", {"path": "MEMORY.md"})
    assert out.truncated and out.result.endswith("ask for a narrower range (e.g. read_file with start/lines) "
                                                 "to see the rest …]")
    assert not (ws.root / ".kit" / "tool-output").exists()


def test_read_file_reads_no_other_file_under_kit(ws_path):
    set_config(ws_path, "tools:\n  max_result_chars: 5000\n  exec: {mode: allow}\n")
    ws = Workspace.open(ws_path)
    ctx = ToolContext(ws, session_id="s1")
    execute_tool(ctx, "exec", {"command": SEQ}, call_id="c1")
    ws.open_state().close()  # .kit/state.db exists
    (ws.root / ".kit" / "tool-output" / "s1" / "notes.md").write_text("not an output")
    (ws.root / "notes").symlink_to(ws.root / ".kit", target_is_directory=True)
    (ws.root / ".kit" / "tool-output" / "s1" / "db.txt").symlink_to(ws.root / ".kit" / "state.db")
    refused = ".kit/ holds Kit's machine state; read_file reads only the saved tool outputs in .kit/tool-output/"
    for path in (".kit/state.db", "./.kit/state.db", ".KIT/state.db", "notes/state.db", ".kit/tool-output",
                 ".kit/tool-output/s1/notes.md", ".kit/tool-output/s1/db.txt", "notes/tool-output/s1/db.txt"):
        out = execute_tool(ctx, "read_file", {"path": path})
        assert not out.ok and out.result == f"error: {path}: {refused}", path
    # the saved output itself, also through the symlinked folder: it resolves to the real one
    for path in (".kit/tool-output/s1/c1.txt", "notes/tool-output/s1/c1.txt"):
        out = execute_tool(ctx, "read_file", {"path": path, "lines": 1})
        assert out.ok and out.result == "exit_code: 0\n", path


def test_old_outputs_are_pruned_by_age_then_by_size(ws_path, kit_now):
    import os

    kit_now("2026-05-07T09:00:00+00:00")
    set_config(ws_path, "tools:\n  max_result_chars: 5000\n  exec: {mode: allow}\n")  # 7 days, 100 MB
    ws = Workspace.open(ws_path)
    now = 1778144400  # 2026-05-07T09:00:00Z
    for session, days in (("old", 8), ("week", 6), ("day", 1)):  # saved by earlier sessions, 29 KB each
        folder = ws.root / ".kit" / "tool-output" / session
        folder.mkdir(parents=True)
        (folder / "c1.txt").write_text("x" * 29_000)
        os.utime(folder / "c1.txt", (now - days * 86400, now - days * 86400))
    execute_tool(ToolContext(ws, session_id="now"), "exec", {"command": SEQ}, call_id="c1")
    # by age: only "old" is over 7 days
    assert _saved(ws) == [f".kit/tool-output/{s}/c1.txt" for s in ("day", "now", "week")]
    # by size: 4 × 29 KB over 50 KB removes the oldest first; the session saving now is never
    # removed, even when it alone is over the budget
    set_config(ws_path, "tools:\n  max_result_chars: 5000\n  output_keep_mb: 0.05\n  exec: {mode: allow}\n")
    ws.reload()
    execute_tool(ToolContext(ws, session_id="now"), "exec", {"command": "seq 2 6001"}, call_id="c2")
    assert _saved(ws) == [".kit/tool-output/now/c1.txt", ".kit/tool-output/now/c2.txt"]


def test_saved_outputs_are_not_workspace_content(ws_path):
    """Regression guard for what was suspected to break `kit mcp serve`'s search: files under
    .kit/tool-output/ are never seen by the reload, the index or memory search."""
    from kit.memory.service import Memory

    set_config(ws_path, "tools:\n  max_result_chars: 5000\n  exec: {mode: allow}\n")
    ws = Workspace.open(ws_path)
    (ws.root / "memory").mkdir(exist_ok=True)
    (ws.root / "memory" / "2026-05-07.md").write_text("# 2026-05-07\n\n- The deploy needs the VPN\n")
    ws.reload()
    mem = Memory(ws, embedder=None)
    try:
        mem.sync()
        out = execute_tool(ToolContext(ws, session_id="s1"), "exec",
                           {"command": "for i in $(seq 1 900); do echo deploy needs the VPN $i; done"},
                           call_id="c1")
        assert out.truncated and _saved(ws) == [".kit/tool-output/s1/c1.txt"]
        assert ws.reload().changed == ()
        assert [h.path for h in mem.search("deploy VPN", record=False).results] == ["memory/2026-05-07.md"]
        mem.sync()
        assert [h.path for h in mem.search("deploy VPN", record=False).results] == ["memory/2026-05-07.md"]
    finally:
        mem.close()


def test_the_agent_saves_under_its_session_and_the_call_id(ws_path, tmp_path):
    from helpers_agent import agent_for, recorded_calls, write_script

    set_config(ws_path, "tools:\n  max_result_chars: 5000\n  exec: {mode: allow}\n"
                        "memory:\n  active_recall: {enabled: false}\n")
    ws = Workspace.open(ws_path)
    script = write_script(tmp_path, [{"tool_calls": [{"name": "exec", "arguments": {"command": SEQ}}]},
                                     {"text": "done"}])
    agent = agent_for(ws, script)
    agent.turn("count")
    rel = f".kit/tool-output/{agent.session_id}/call_1_1.txt"
    assert _saved(ws) == [rel]
    [sent] = [m["content"] for m in recorded_calls(script)[1]["messages"] if m["role"] == "tool"]
    assert f"the whole output is saved in {rel} (read_file" in sent
