"""`kit fleet status`'s table at a terminal's 80 columns (no broker needed: the rows are data)."""

from __future__ import annotations

import io

from rich.console import Console

from kit.cli.fleet_cmd import status_table
from kit.fleet.control import StatusRow


def render(rows, width: int = 80) -> str:
    out = io.StringIO()
    Console(file=out, width=width, highlight=False, soft_wrap=True).print(status_table(rows))
    return out.getvalue()


def test_paths_stay_whole_at_80_columns():
    """Regression: every column folded alike, so at 80 columns a path was cut mid-name
    ("/tmp/nu.90h0/hom" over "e/agent") and could not be copied from the table."""
    rows = [StatusRow(path=f"/srv/kit/users/{name}", kind="dream", state="done", result="ok",
                      finished_at="2026-12-01T23:38:26+00:00", duration_s=0.555,
                      summary="promoted 0, changed 4 files of the workspace's reports and its diary")
            for name in ("alice-liddell", "bob")]
    text = render(rows)
    lines = text.splitlines()
    for row in rows:
        [line] = [ln for ln in lines if row.path in ln]
        assert line.split()[1:4] == ["dream", "done", "ok"]
        assert "2026-12-01" in line and "0.56 s" in line
    assert all(len(ln.rstrip()) <= 80 for ln in lines), lines
    assert "of the workspace's" in " ".join(text.split())  # the detail wraps, never cut


def test_the_detail_is_shown_as_written():
    """'[not in the registry]' is text, not rich markup (it vanished as an unknown style tag)."""
    row = StatusRow(path="/srv/kit/old", kind="dream", state="done", result="failed",
                    error="MEMORY.md:2: not UTF-8 [byte 0xff]", registered=False)
    text = " ".join(render([row], width=200).split())
    assert "MEMORY.md:2: not UTF-8 [byte 0xff] [not in the registry]" in text
