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
