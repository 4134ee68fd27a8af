"""The workspace's lifecycle events: `workspace:loaded`, `workspace:changed`, `config:reloaded`.

    start(ws, by="run")     # an agent or a watcher begins work on the workspace

`start` fires `workspace:loaded` once per workspace object (the first agent or watcher of the
process; a one-shot command such as `kit memory search` or `kit doctor` is no such start, so it
runs no hook code it did not ask for) and from then on every reload that changed something fires
`workspace:changed`, and a re-read kit.yaml fires `config:reloaded` after it. Reloads come from
the watcher (an edit in your editor) and from Kit's own writes (memory_write, a dream, write_file):
both change the workspace. Handlers run inside the reload, so keep them short, and a handler that
writes into the workspace on every `workspace:changed` makes a loop.
"""

from __future__ import annotations

import threading
from typing import Any

from kit.core import CONFIG_FILE, ReloadResult, WorkspaceCore
from kit.snapshot import Snapshot


class _Lifecycle:
    def __init__(self, ws: WorkspaceCore):
        self.ws = ws
        self.started = False
        self.lock = threading.Lock()
        self.config = dict(ws.config.flat())

    def start(self, by: str) -> bool:
        with self.lock:
            if self.started:
                return False
            self.started = True
            self.config = dict(self.ws.config.flat())
        self.ws.subscribe(self.on_reload)
        snapshot = self.ws.snapshot
        _fire(self.ws, "workspace:loaded", {
            "by": by,
            "version": snapshot.version,
            "documents": sorted(snapshot.documents),
            "problems": [str(p) for p in snapshot.issues],
        })
        return True

    def on_reload(self, result: ReloadResult, snapshot: Snapshot) -> None:
        problems = [str(p) for p in result.errors]
        if result.changed:
            _fire(self.ws, "workspace:changed",
                  {"version": result.version, "changed": list(result.changed), "problems": problems})
        config_problems = [str(p) for p in result.errors if p.path == CONFIG_FILE]
        if CONFIG_FILE in result.changed or config_problems:
            new = dict(snapshot.config.flat())
            with self.lock:
                old, self.config = self.config, new
            keys = sorted(k for k in old.keys() | new.keys() if old.get(k) != new.get(k))
            _fire(self.ws, "config:reloaded", {
                "version": result.version,
                "ok": not config_problems,  # false: kit.yaml has errors and the last good config stays
                "changed_keys": keys,
                "problems": config_problems,
            })


def _fire(ws: WorkspaceCore, event: str, data: dict[str, Any]) -> None:
    from kit.hooks.registry import fire_hook

    fire_hook(ws, event, data)


def start(ws: WorkspaceCore, *, by: str) -> bool:
    """Fire `workspace:loaded` (once per workspace object) and fire `workspace:changed` /
    `config:reloaded` on its reloads from now on. True the first time."""
    return ws.owned("hooks.lifecycle", lambda: _Lifecycle(ws)).start(by)
