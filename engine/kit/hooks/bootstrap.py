"""Wire the prompt builder's `agent:bootstrap` extension point to hooks.

    callback = bootstrap_callback(ws, session_key="main")
    build_prompt(ws, kind="default", bootstrap=callback)   # kit.prompt.builder

The callback receives the bootstrap files before budgeting and returns them after the
`agent:bootstrap` hooks have added, removed or rewritten some. Hooks see
`data = {"kind": <run kind>, "files": [{"name": "SOUL.md", "content": "…"}, …]}` and may return
`{"files": [...]}` (replace the list), `{"remove": ["USER.md"]}` and/or
`{"add": [{"name": "TEAM.md", "content": "…"}]}` (adding an existing name rewrites it).

The builder passes `BootstrapFile(name, text)` objects; unchanged files come back as the very
same objects, new or rewritten ones as new objects of that type. A blocked or failed hook leaves the
files as they were (the prompt must always build).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from kit.core import WorkspaceCore
from kit.fsutil import sha1_hex


def apply_bootstrap_hooks(ws: WorkspaceCore, files: Sequence[Any], *, kind: str = "default", session_key: str | None = None) -> list[Any]:
    """Fire agent:bootstrap with the files as `{name, content}` dicts and apply the result."""
    from kit.hooks.registry import registry_for

    files = list(files)
    registry = registry_for(ws)
    if not registry.for_event("agent:bootstrap"):
        return files  # the common case: no hook, no copying, byte-identical prompt
    before = [{"name": f.name, "content": f.text} for f in files]
    outcome = registry.fire("agent:bootstrap", {"kind": kind, "files": before}, session_key=session_key)
    after = outcome.data.get("files", before)
    if outcome.blocked or after == before:
        return files
    unchanged = {(f.name, f.text): f for f in files}
    # new files are made like the ones the builder passed (its BootstrapFile: hooks sit below the
    # prompt and do not import it); with none passed, {name, content} dicts, which it accepts too
    make = type(files[0]) if files else (lambda name, content: {"name": name, "content": content})
    return [unchanged.get((item["name"], item["content"])) or make(item["name"], item["content"])
            for item in after]


class BootstrapCallback:
    """The prompt builder's agent:bootstrap hook: `callback(files, *, kind, workspace, version)`.

    `cache_key` tells the builder when its cached assembly is stale: it changes with the
    agent:bootstrap hooks' content, trust and enabled state, which the snapshot version does not
    cover (handler.py is not a tracked document, trust lives outside the workspace).
    """

    def __init__(self, ws: WorkspaceCore, session_key: str | None = None):
        self.ws = ws
        self.session_key = session_key
        self.name = "kit.hooks:agent:bootstrap"

    @property
    def cache_key(self) -> str:
        from kit.hooks.registry import registry_for

        registry = registry_for(self.ws)
        hooks = registry.for_event("agent:bootstrap")
        if not hooks:
            return "hooks:none"
        parts = []
        for hook in hooks:
            digest = hook.digest()
            parts.append(f"{hook.name}:{digest}:{hook.enabled}:{registry.is_trusted(hook, digest)}")
        return "hooks:" + sha1_hex("|".join(parts) + f"|{self.session_key}", 16)

    def __call__(self, files: Sequence[Any], kind: str = "default", **_context: Any) -> list[Any]:
        return apply_bootstrap_hooks(self.ws, files, kind=kind, session_key=self.session_key)


def bootstrap_callback(ws: WorkspaceCore, session_key: str | None = None) -> Callable[..., list[Any]]:
    """A callable for `kit.prompt.builder.build_prompt(ws, bootstrap=...)`."""
    return BootstrapCallback(ws, session_key)
