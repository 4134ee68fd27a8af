"""Capture real transcripts from the llama.cpp server into tests/data/llamacpp/, for tests that
replay them (SSE parsing, tool-call delta assembly, finish_reason, usage, token calibration).

    make llm                                   # .venv + .venv-llm (the server packages)
    .venv/bin/python scripts/llm_capture.py    # rewrites tests/data/llamacpp/

Decoding is greedy with a fixed seed, so a re-run gives the same text (ids, `created` and
`timings` differ). Each capture NAME is two or three files: NAME.request.json (what was sent:
method, path, body), NAME.sse (the raw response body, byte for byte, for a streamed request) or
NAME.json (the parsed response), and manifest.json lists status and headers for all of them,
with the server settings and package versions. README.md in that folder says what each shows.
"""

from __future__ import annotations

import http.client
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

sys.path.insert(0, str(Path(__file__).resolve().parent))
import llm_server  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "tests" / "data" / "llamacpp"
TOOLS_TEMPLATE = ROOT / "scripts" / "llm_templates" / "chatml-tools.jinja"
NOW = "2026-05-07T09:00:00+00:00"

WEATHER = {"type": "function", "function": {
    "name": "get_weather", "description": "Get the weather for a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}


def request(url: str, method: str, path: str, body: Any = None) -> tuple[int, dict[str, str], bytes]:
    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=600)
    try:
        data = json.dumps(body).encode() if body is not None else None
        conn.request(method, path, body=data, headers={"Content-Type": "application/json"} if data else {})
        response = conn.getresponse()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
    finally:
        conn.close()


class Capture:
    def __init__(self, server: llm_server.LlamaServer, label: str):
        self.server = server
        self.label = label  # which server (template) answered, for the manifest
        self.manifest: dict[str, Any] = {}

    def save(self, name: str, path: str, body: Any = None, *, method: str = "POST", note: str = "") -> Any:
        status, headers, raw = request(self.server.url, method, path, body)
        # the model's absolute path (in /props) says where this machine keeps its venv: keep the name
        model_path = self.server.info.get("model_path", "")
        if model_path:
            raw = raw.replace(json.dumps(model_path)[1:-1].encode(), Path(model_path).name.encode())
        (OUT / f"{name}.request.json").write_text(
            json.dumps({"method": method, "path": path, "body": body}, indent=2, ensure_ascii=False) + "\n")
        streamed = bool(body and body.get("stream"))
        if streamed:
            (OUT / f"{name}.sse").write_bytes(raw)
            parsed = raw
        else:
            parsed = json.loads(raw)
            (OUT / f"{name}.json").write_text(json.dumps(parsed, indent=2, ensure_ascii=False) + "\n")
        keep = {k: v for k, v in headers.items() if k in ("content-type", "transfer-encoding", "server")}
        self.manifest[name] = {"server": self.label, "status": status, "headers": keep, "note": note}
        print(f"  {name}: HTTP {status}, {len(raw)} bytes", flush=True)
        return parsed


def usage_of(reply: dict[str, Any]) -> dict[str, int]:
    return reply["usage"]


def kit_prompt_and_tools() -> dict[str, Any]:
    """Kit's system prompt for a fresh `kit init` workspace (clock frozen) with Kit's own token
    estimates, and Kit's tool schemas with the estimate the agent loop adds for them."""
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "HOME": tmp, "XDG_CONFIG_HOME": f"{tmp}/.config", "XDG_DATA_HOME": f"{tmp}/.share",
               "KIT_NOW": NOW, "HF_HUB_OFFLINE": "1"}
        ws = Path(tmp) / "ws"
        subprocess.run([sys.executable, "-m", "kit", "init", str(ws)], env=env, check=True, capture_output=True)
        done = subprocess.run([sys.executable, "-m", "kit", "prompt", "--json", "-w", str(ws)], env=env,
                              check=True, capture_output=True, text=True)
    prompt = json.loads(done.stdout)
    # Kit's internals: the built-in tools' schemas and the loop's estimate of their size
    from kit.agent.compaction import tools_tokens
    from kit.tools import builtin_registry

    tools = builtin_registry().schemas()
    return {"system": prompt["prompt"], "system_est": prompt["est_tokens"], "tools": tools,
            "tools_est": tools_tokens(tools),
            "estimate_rule": "kit: chars/4 (CJK 1 each) x 1.2"}


def stock(cap: Capture, kit: dict[str, Any]) -> dict[str, Any]:
    """The model's own template: text streaming, length cuts, tools dropped, Kit's prompt size."""
    question = [{"role": "system", "content": "You are a helpful assistant. Answer in one short sentence."},
                {"role": "user", "content": "What colour is the sky on a clear day?"}]
    ramble = [{"role": "user", "content": "Write a very long story about a dragon and a lighthouse keeper."}]
    cap.save("stream-text", "/v1/chat/completions",
             {"model": "smollm2", "messages": question, "max_tokens": 48, "stream": True,
              "stream_options": {"include_usage": True}},
             note="text deltas; the last choice chunk has finish_reason stop; usage comes in a separate "
                  "chunk with choices: [] (stream_options.include_usage), then data: [DONE]")
    cap.save("stream-no-usage", "/v1/chat/completions",
             {"model": "smollm2", "messages": question, "max_tokens": 48, "stream": True},
             note="the same without stream_options: no usage chunk (llama.cpp still sends timings)")
    cap.save("stream-length", "/v1/chat/completions",
             {"model": "smollm2", "messages": ramble, "max_tokens": 12, "stream": True,
              "stream_options": {"include_usage": True}},
             note="a streamed reply cut by max_tokens: finish_reason length, completion_tokens 12")
    cap.save("length", "/v1/chat/completions",
             {"model": "smollm2", "messages": ramble, "max_tokens": 12},
             note="a non-streamed reply cut by max_tokens: finish_reason length")
    cap.save("props", "/props", method="GET", note="the model's own template and its caps (no tools)")
    cap.save("tools-dropped.apply-template", "/apply-template",
             {"messages": [{"role": "user", "content": "What is the weather in Paris?"}], "tools": [WEATHER]},
             note="the prompt llama.cpp builds for a tools request: the tools are not in it")
    cap.save("tools-dropped", "/v1/chat/completions",
             {"model": "smollm2", "messages": [{"role": "user", "content": "What is the weather in Paris? Use the tool."}],
              "tools": [WEATHER], "max_tokens": 48},
             note="a tools request answered as if no tools were sent: no error, no warning, no tool_calls")
    # Kit's prompt: the server's count of the system message = with it minus without it
    hi = [{"role": "user", "content": "hi"}]
    with_system = cap.save("kit-prompt", "/v1/chat/completions",
                           {"model": "smollm2", "messages": [{"role": "system", "content": kit["system"]}, *hi],
                            "max_tokens": 1},
                           note="Kit's system prompt for a fresh `kit init` workspace, as Kit sends it")
    alone = cap.save("kit-prompt-baseline", "/v1/chat/completions",
                     {"model": "smollm2", "messages": hi, "max_tokens": 1},
                     note="the same user message without a system prompt (template overhead baseline)")
    return {"with_system": usage_of(with_system)["prompt_tokens"], "baseline": usage_of(alone)["prompt_tokens"]}


def with_tools(cap: Capture, kit: dict[str, Any]) -> dict[str, Any]:
    """A tools-capable ChatML template: real tool_calls, streamed; what Kit's tools cost in tokens."""
    system = {"role": "system",
              "content": "You are a weather bot. For every question, call the get_weather tool."}

    def calls(i: int, cities: list[str]) -> dict[str, Any]:
        return {"role": "assistant", "content": "", "tool_calls": [
            {"id": f"call_{i}{j}", "type": "function",
             "function": {"name": "get_weather", "arguments": json.dumps({"city": c})}}
            for j, c in enumerate(cities)]}

    # Two worked examples teach the 135M model the two-call reply; logit_bias bans the token
    # "response" so it writes <tool_call> rather than imitating the <tool_response> it saw.
    _, _, raw = request(cap.server.url, "POST", "/tokenize", {"content": "<tool_response>", "with_pieces": True})
    response_ids = [t["id"] for t in json.loads(raw)["tokens"] if t["piece"] == "response"]
    bias = [[i, False] for i in response_ids]
    fewshot = [system,
               {"role": "user", "content": "Weather in Rome and Oslo?"}, calls(1, ["Rome", "Oslo"]),
               {"role": "tool", "tool_call_id": "call_10", "content": "sunny"},
               {"role": "tool", "tool_call_id": "call_11", "content": "snow"},
               {"role": "assistant", "content": "Rome: sunny. Oslo: snow."},
               {"role": "user", "content": "Weather in Lima and Cairo?"}, calls(2, ["Lima", "Cairo"]),
               {"role": "tool", "tool_call_id": "call_20", "content": "fog"},
               {"role": "tool", "tool_call_id": "call_21", "content": "hot"},
               {"role": "assistant", "content": "Lima: fog. Cairo: hot."}]
    cap.save("stream-tool-calls", "/v1/chat/completions",
             {"model": "smollm2", "messages": [*fewshot, {"role": "user", "content": "Weather in Paris and Berlin?"}],
              "tools": [WEATHER], "parallel_tool_calls": True, "logit_bias": bias, "max_tokens": 60,
              "stream": True, "stream_options": {"include_usage": True}},
             note="two tool calls in one streamed reply (index 0 and 1), arguments split across chunks; "
                  "the model started a third call and hit max_tokens, so finish_reason is length and the "
                  "unfinished call is never sent")
    single = [system, {"role": "user", "content": "Weather in Rome?"}, calls(1, ["Rome"]),
              {"role": "tool", "tool_call_id": "call_10", "content": "sunny"},
              {"role": "assistant", "content": "Sunny."},
              {"role": "user", "content": "Weather in Oslo?"}, calls(2, ["Oslo"]),
              {"role": "tool", "tool_call_id": "call_20", "content": "snow"},
              {"role": "assistant", "content": "Snow."},
              {"role": "user", "content": "Weather in Paris?"}]
    cap.save("stream-tool-call", "/v1/chat/completions",
             {"model": "smollm2", "messages": single, "tools": [WEATHER], "logit_bias": bias, "max_tokens": 60,
              "stream": True, "stream_options": {"include_usage": True}},
             note="one streamed tool call, finish_reason tool_calls")
    cap.save("tool-call", "/v1/chat/completions",
             {"model": "smollm2", "messages": single, "tools": [WEATHER], "logit_bias": bias, "max_tokens": 60},
             note="the same, not streamed: message.tool_calls with arguments as a JSON string")
    # what Kit's tool schemas cost when the template does render them
    hi = [{"role": "system", "content": kit["system"]}, {"role": "user", "content": "hi"}]
    with_kit_tools = request(cap.server.url, "POST", "/v1/chat/completions",
                             {"model": "smollm2", "messages": hi, "tools": kit["tools"], "max_tokens": 1})
    without = request(cap.server.url, "POST", "/v1/chat/completions",
                      {"model": "smollm2", "messages": hi, "max_tokens": 1})
    return {"with_tools": json.loads(with_kit_tools[2])["usage"]["prompt_tokens"],
            "without_tools": json.loads(without[2])["usage"]["prompt_tokens"]}


def main() -> int:
    found = llm_server.check()
    if not found.get("ok"):
        print(f"skipped: {found.get('error')} (run `make llm`)")
        return 0
    OUT.mkdir(parents=True, exist_ok=True)
    kit = kit_prompt_and_tools()
    settings = {"threads": 1, "ctx": 8192, "max_tokens": 256, "temperature": 0.0, "seed": 42}
    manifest: dict[str, Any] = {"xllamacpp": found["xllamacpp"], "model": Path(found["model_path"]).name,
                                "settings": settings, "captures": {}}
    print("stock template (SmolLM2's own):")
    with llm_server.LlamaServer(**settings) as server:
        cap = Capture(server, "stock")
        counts = stock(cap, kit)
        manifest["captures"].update(cap.manifest)
    print(f"tools template ({TOOLS_TEMPLATE.relative_to(ROOT)}):")
    with llm_server.LlamaServer(**settings, chat_template=TOOLS_TEMPLATE) as server:
        cap = Capture(server, "tools-template")
        tool_counts = with_tools(cap, kit)
        manifest["captures"].update(cap.manifest)
    system_real = counts["with_system"] - counts["baseline"]
    tools_real = tool_counts["with_tools"] - tool_counts["without_tools"]
    tokens = {
        "kit_system_prompt": {"chars": len(kit["system"]), "kit_estimate": kit["system_est"],
                              "server_tokens": system_real,
                              "ratio_estimate_to_real": round(kit["system_est"] / system_real, 3)},
        "kit_tools": {"chars": len(json.dumps(kit["tools"], ensure_ascii=False)), "kit_estimate": kit["tools_est"],
                      "server_tokens_with_tools_template": tools_real,
                      "server_tokens_with_stock_template": 0,
                      "ratio_estimate_to_real": round(kit["tools_est"] / tools_real, 3) if tools_real else None},
        "request_prompt_tokens": {"stock_template_system_plus_hi": counts["with_system"],
                                  "tools_template_system_tools_plus_hi": tool_counts["with_tools"]},
        "note": "server_tokens = prompt_tokens with the part minus prompt_tokens without it. The stock "
                "SmolLM2 template drops tools, so Kit's context estimate (system + tools) counts "
                f"{kit['tools_est']} tokens the server never sees. Estimate rule: {kit['estimate_rule']}.",
    }
    (OUT / "prompt-tokens.json").write_text(json.dumps(tokens, indent=2) + "\n")
    (OUT / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    print(json.dumps(tokens, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
