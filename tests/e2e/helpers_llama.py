"""Shared by the end-to-end suite (tests/e2e): the real llama.cpp server's settings, workspaces
pointed at it, and a runner for real `python -m kit` processes. See conftest.py for the fixtures."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "scripts"))

import llm_server  # noqa: E402  (scripts/ is not a package)

SERVER_CAP = 64  # tokens per reply, the server's n_predict
NOW = "2026-05-07T09:00:00+00:00"
FACT_TOKEN = "ZEBRA-7431"  # distinctive: no model says it unless MEMORY.md reached the prompt
MEMORY_FACT = f"- The office door code is {FACT_TOKEN}."
QUESTION = "What is the office door code? Reply with the code only."
RUN_TIMEOUT_S = 600  # a cold prompt on a loaded machine; the server answers in seconds when idle
# read at import: the suite's autouse fixture clears KIT_* variables before each test
REQUIRED = bool(os.environ.get("KIT_E2E_REQUIRED"))
SERVER_PYTHON = llm_server.server_python()


@dataclass
class KitRun:
    code: int
    stdout: str
    stderr: str
    metrics_before: dict[str, float] = field(repr=False)
    metrics_after: dict[str, float] = field(repr=False)

    def json(self) -> dict[str, Any]:
        assert self.code == 0, f"kit exited {self.code}: {self.stderr}"
        return json.loads(self.stdout)

    def counted(self, name: str) -> int:
        """How much one of the server's counters moved during the run."""
        return int(self.metrics_after.get(name, 0) - self.metrics_before.get(name, 0))

    @property
    def server_prompt_tokens(self) -> int:
        # llama.cpp counts evaluated and cache-reused prompt tokens separately
        return self.counted("prompt_tokens_total") + self.counted("prompt_tokens_cached_total")


def make_workspace(parent: Path, config: str) -> Path:
    """`kit init` a workspace named "ws" (the name is in the prompt) with the fact in MEMORY.md."""
    from kit.init import init_workspace

    root = parent / "ws"
    init_workspace(root)
    memory = root / "MEMORY.md"
    memory.write_text(memory.read_text().rstrip("\n") + "\n\n" + MEMORY_FACT + "\n")
    (root / "kit.yaml").write_text(config)
    return root


def local_config(server: llm_server.LlamaServer, *, model: str = "local/smollm2", extra: str = "") -> str:
    return (
        "providers:\n"
        f"  local: {{type: openai, base_url: \"{server.base_url}\", timeout_s: {RUN_TIMEOUT_S}}}\n"
        f"{extra}"
        "agent:\n"
        f"  model: {model}\n"
        # Kit's own cap for a local model: a request's max_tokens replaces the server's n_predict
        # in llama.cpp (measured: 1,024 asked, 1,024 made past a server cap of 64)
        f"  max_tokens_local: {SERVER_CAP}\n"
    )


class KitRunner:
    """runner(ws, "run", "--json", QUESTION) → KitRun: a real `python -m kit` process in ws, with
    the server's token counters read before and after. Its environment is isolated here (own HOME
    and XDG folders, no KIT_* from outside) so module-scoped fixtures can use it too."""

    def __init__(self, server: llm_server.LlamaServer, home: Path):
        self.server = server
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("KIT_")}
        self.env.update(HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"),
                        XDG_DATA_HOME=str(home / ".local" / "share"), KIT_NOW=NOW,
                        HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")

    def __call__(self, ws: Path, *args: str, env: dict[str, str] | None = None) -> KitRun:
        before = self.server.metrics()
        done = subprocess.run([sys.executable, "-m", "kit", *args], cwd=ws, env={**self.env, **(env or {})},
                              capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
        return KitRun(done.returncode, done.stdout, done.stderr, before, self.server.metrics())


