"""Real-model benchmark: time to first token straight from the llama.cpp server vs Kit's time to
first output for the same question, and Kit's context estimate vs the server's prompt_tokens.
Needs the server packages (`make llm`, or `make e2e`); skips with a note without them.

    python bench/llm/run.py [--runs N]

Both sides get the same workspace (a fresh `kit init` plus a fact in MEMORY.md, clock frozen) and
a warm prompt cache: one untimed `kit run` first, so every timed request reuses the cached prefix
(a cold Kit prompt is ~1,100 tokens: seconds to tens of seconds of prompt evaluation on 2 busy
cores, which would swamp what is compared here). Direct = the same system prompt and question
streamed from the server with `stream: true`; its first token is the first SSE chunk carrying
content. Kit = a `kit run QUESTION` process, from spawn to the first byte of the reply on stdout
(piped, Kit prints the reply once it is complete), to the first `text_delta` of `--stream-json`,
and, on a pseudo-terminal, to the reply's first word on screen (streamed, live Markdown): time to
first printed token. Medians of --runs; ratios in one run.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlsplit

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
sys.path.insert(0, str(HERE.parent))

import llm_server  # noqa: E402

from _isolated import isolate_home  # noqa: E402

NOW = "2026-05-07T09:00:00+00:00"
FACT = "- The office door code is ZEBRA-7431."
QUESTION = "What is the office door code? Reply with the code only."
CAP = 64


def direct_stream(url: str, messages: list[dict], max_tokens: int = CAP) -> tuple[float, float, str]:
    """(seconds to the first content delta, seconds to the end, text) for one streamed request."""
    parts = urlsplit(url)
    body = json.dumps({"model": "smollm2", "messages": messages, "stream": True, "max_tokens": max_tokens}).encode()
    start = time.perf_counter()
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=600)
    conn.request("POST", "/v1/chat/completions", body=body, headers={"Content-Type": "application/json"})
    response = conn.getresponse()
    first, text = None, []
    for raw in response:  # one SSE line at a time, as the server flushes them
        line = raw.decode().strip()
        if not line.startswith("data: ") or line == "data: [DONE]":
            continue
        for choice in json.loads(line[6:]).get("choices", []):
            delta = choice.get("delta", {}).get("content")
            if delta:
                first = first if first is not None else time.perf_counter() - start
                text.append(delta)
    total = time.perf_counter() - start
    conn.close()
    return (first if first is not None else total), total, "".join(text)


def kit_first_output(ws: Path, env: dict[str, str]) -> tuple[float, float, str]:
    """(seconds to the first byte on stdout, seconds to exit, stdout) for one `kit run QUESTION`."""
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "kit", "run", QUESTION], cwd=ws, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    first_byte = proc.stdout.read(1)
    first = time.perf_counter() - start
    rest = proc.stdout.read()
    proc.wait()
    return first, time.perf_counter() - start, (first_byte + rest).decode(errors="replace")


def kit_stream_json_first(ws: Path, env: dict[str, str]) -> tuple[float, str]:
    """(seconds from spawn to the first `text_delta` line of `kit run --stream-json`, the reply)."""
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "kit", "run", "--stream-json", QUESTION], cwd=ws, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    first, reply = None, ""
    for line in proc.stdout:
        event = json.loads(line)
        if event["type"] == "text_delta" and first is None:
            first = time.perf_counter() - start
        elif event["type"] == "final":
            reply = event["reply"]
    proc.wait()
    return (first if first is not None else time.perf_counter() - start), reply


def kit_streamed_first_token(ws: Path, env: dict[str, str], reply: str) -> float | None:
    """Seconds from spawn to the reply's first characters on a terminal: `kit run QUESTION` on a
    pseudo-terminal (live Markdown), waiting for the start of the reply the same question got
    (greedy decoding: the same text every time). None without pexpect."""
    try:
        import pexpect
    except ImportError:
        return None
    words = reply.strip().split()
    if not words:
        return None
    start = time.perf_counter()
    child = pexpect.spawn(sys.executable, ["-m", "kit", "run", QUESTION], cwd=str(ws),
                          env={**env, "TERM": "xterm-256color"}, encoding="utf-8", timeout=600,
                          dimensions=(40, 120))
    try:
        child.expect_exact(words[0][:8])
        first = time.perf_counter() - start
        child.expect(pexpect.EOF)
    finally:
        child.close()
    return first


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    found = llm_server.check()
    if not found.get("ok"):
        print(f"skipped: the llama.cpp server packages are not installed ({found.get('error')}); "
              "`make llm` installs them into .venv-llm")
        return 0
    with tempfile.TemporaryDirectory() as tmp, llm_server.LlamaServer(max_tokens=CAP) as server:
        isolate_home(tmp)
        from kit.init import init_workspace

        ws = Path(tmp) / "ws"
        init_workspace(ws)
        (ws / "MEMORY.md").write_text((ws / "MEMORY.md").read_text().rstrip("\n") + "\n\n" + FACT + "\n")
        (ws / "kit.yaml").write_text(
            f"providers:\n  local: {{type: openai, base_url: \"{server.base_url}\", timeout_s: 600}}\n"
            "agent:\n  model: local/smollm2\n")
        env = {**os.environ, "KIT_NOW": NOW}
        print(f"server: xllamacpp {found['xllamacpp']}, {Path(found['model_path']).name}, "
              f"threads {server.settings['threads']}, ctx {server.settings['ctx']}, cap {CAP}; "
              f"started in {server.startup_s:.1f} s")

        # warm-up (untimed): fills the prompt cache; its estimate is the raw rule's (nothing learned
        # yet), the second run's is calibrated by the first reply's prompt_tokens
        runs = [json.loads(subprocess.run([sys.executable, "-m", "kit", "run", "--json", QUESTION], cwd=ws,
                                          env=env, capture_output=True, text=True, check=True).stdout)["usage"]
                for _ in range(2)]
        system = json.loads(subprocess.run([sys.executable, "-m", "kit", "prompt", "--json"], cwd=ws, env=env,
                                           capture_output=True, text=True, check=True).stdout)["prompt"]
        messages = [{"role": "system", "content": system}, {"role": "user", "content": QUESTION}]
        direct_stream(server.url, messages)  # warm the cache for exactly this request too

        direct = [direct_stream(server.url, messages) for _ in range(args.runs)]
        kit = [kit_first_output(ws, env) for _ in range(args.runs)]
        # the same without active recall (which opens the memory index and may load the embedder)
        no_recall = {**env, "KIT_MEMORY__ACTIVE_RECALL__ENABLED": "false"}
        kit_plain = [kit_first_output(ws, no_recall) for _ in range(args.runs)]
        d_first = statistics.median(r[0] for r in direct)
        d_total = statistics.median(r[1] for r in direct)
        k_first = statistics.median(r[0] for r in kit)
        k_total = statistics.median(r[1] for r in kit)
        k_plain = statistics.median(r[0] for r in kit_plain)
        stream_json = [kit_stream_json_first(ws, env) for _ in range(args.runs)]
        j_first = statistics.median(r[0] for r in stream_json)
        streamed_runs = [kit_streamed_first_token(ws, env, stream_json[0][1]) for _ in range(args.runs)]
        streamed = statistics.median(streamed_runs) if None not in streamed_runs else None
        # generation speed, for agent.max_tokens_local: a reply of up to 256 tokens, streamed
        ramble = [{"role": "user", "content": "Write a very long story about a dragon, at least 800 words."}]
        speeds = []
        for _ in range(max(1, args.runs // 2)):
            before = server.metrics().get("tokens_predicted_total", 0)
            first, total, _text = direct_stream(server.url, ramble, max_tokens=256)
            made = server.metrics().get("tokens_predicted_total", 0) - before
            speeds.append(made / max(total - first, 1e-6))
        rate = statistics.median(speeds)

    print(f"\nmedians of {args.runs} runs, warm prompt cache")
    print(f"  server first token (streamed, direct)   {d_first * 1000:8.0f} ms")
    print(f"  server whole reply (streamed, direct)   {d_total * 1000:8.0f} ms   ({len(direct[0][2])} chars)")
    print(f"  kit run: first output on stdout         {k_first * 1000:8.0f} ms   (process start to reply)")
    print(f"  kit run: process exit                   {k_total * 1000:8.0f} ms")
    print(f"  kit run, active recall off: first output {k_plain * 1000:8.0f} ms")
    print(f"  ratio kit first output / server first token   {k_first / d_first:6.1f}x")
    print(f"  ratio kit first output / server whole reply   {k_first / d_total:6.1f}x")
    print(f"  Kit's own share (first output - server whole reply): {(k_first - d_total) * 1000:.0f} ms, "
          f"{(k_plain - d_total) * 1000:.0f} ms without active recall")
    print(f"  kit run --stream-json: first text_delta {j_first * 1000:8.0f} ms   "
          f"(ratio to server first token {j_first / d_first:.1f}x)")
    if streamed is None:
        print("  kit run on a terminal: first printed token  n/a (pexpect missing)")
    else:
        print(f"  kit run on a terminal: first printed token {streamed * 1000:6.0f} ms   "
              f"(ratio to server first token {streamed / d_first:.1f}x; before streaming the first output "
              f"came with the whole reply: {k_first * 1000:.0f} ms on a pipe above)")
    print(f"\ngeneration: {rate:.1f} tokens/s (median of {len(speeds)}, one thread): a reply at "
          f"agent.max_tokens_local (1,024) takes ~{1024 / rate:.0f} s, one at agent.max_tokens (4,096) "
          f"~{4096 / rate:.0f} s")
    print("\nprompt tokens: Kit's estimate of the request vs the server's prompt_tokens (same request)")
    for label, run in (("before calibration (first run)", runs[0]), ("after calibration (second run)", runs[1])):
        real, estimated = run["prompt_tokens"], run["estimated_prompt_tokens"]
        print(f"  {label:32s} estimate {estimated:6d}  server {real:6d}  ratio {estimated / real:5.2f}")
    print("  (the stock SmolLM2 template drops the tool schemas the raw estimate counts: "
          "tests/data/llamacpp/prompt-tokens.json; the first reply teaches Kit both the factor and the drop)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
