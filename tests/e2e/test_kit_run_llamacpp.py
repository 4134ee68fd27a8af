"""`kit run` against a real llama.cpp server running SmolLM2-135M-Instruct, offline.

Asserted exactly: the fact from MEMORY.md in the answer, usage (and prompt-cache reads) equal to
the server's own counters, the server cap and `--max-tokens` marked `finish_reason: "length"`,
streamed events from the real server, the estimate calibrated against the server's count, the
warning when the stock template drops the tools (and none with a tools template), failover from a
dead primary, visibly. What issue 10 asks for and Kit does not do yet is written as the issue
wants it and marked `xfail(strict=True)` with the issue-10 item it needs: when that item lands the
test passes, strict xfail turns that into a failure, and whoever lands it removes the marker.
"""

from __future__ import annotations

import json
import socket

import pytest
from helpers_llama import (
    FACT_TOKEN,
    QUESTION,
    REPO,
    SERVER_CAP,
    SERVER_PYTHON,
    KitRun,
    llm_server,
    local_config,
    make_workspace,
)

pytestmark = pytest.mark.e2e

RAMBLE = "Write a very long story about a dragon and a lighthouse keeper, at least 800 words."


@pytest.fixture(scope="module")
def ws(llama, tmp_path_factory):
    return make_workspace(tmp_path_factory.mktemp("fact"), local_config(llama))


@pytest.fixture(scope="module")
def answer(ws, kit_run) -> KitRun:
    """One `kit run --json` asking for the fact (the first, cold request of the session)."""
    return kit_run(ws, "run", "--json", QUESTION)


@pytest.fixture(scope="module")
def rambling(ws, kit_run) -> KitRun:
    """A request the model answers at length: the server cap cuts it."""
    return kit_run(ws, "run", "--json", RAMBLE)


def test_memory_fact_reaches_the_answer(answer):
    data = answer.json()
    assert FACT_TOKEN in data["reply"], data["reply"]
    assert data["iterations"] == 1 and data["tool_calls"] == []


def test_usage_is_what_the_server_counted(answer):
    usage = answer.json()["usage"]
    assert usage["model_calls"] == 1
    assert usage["prompt_tokens"] == answer.server_prompt_tokens > 0
    assert usage["completion_tokens"] == answer.counted("tokens_predicted_total") > 0
    assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]


def test_server_cap_cuts_a_rambling_reply(rambling):
    data = rambling.json()
    assert data["usage"]["completion_tokens"] == SERVER_CAP == rambling.counted("tokens_predicted_total")
    assert data["reply"].strip()


def test_capped_reply_is_marked_length(rambling):
    assert rambling.json().get("finish_reason") == "length"


def test_capped_reply_is_marked_for_people(ws, kit_run):
    run = kit_run(ws, "run", RAMBLE)
    assert run.code == 0, run.stderr
    # Kit asked for agent.max_tokens_local = SERVER_CAP tokens, and says so under the cut reply
    assert f"[reply cut: it reached the max_tokens cap ({SERVER_CAP} tokens)" in run.stdout


def test_max_tokens_flag_caps_the_reply(ws, kit_run):
    run = kit_run(ws, "run", "--json", "--max-tokens", "8", RAMBLE)
    data = run.json()
    assert data["usage"]["completion_tokens"] == 8 == run.counted("tokens_predicted_total")
    assert data["finish_reason"] == "length"


def test_context_estimate_is_close_to_the_servers_count(answer):
    usage = answer.json()["usage"]
    # before issue 10: ~2,160 estimated for ~1,100 real (the stock template drops the tools);
    # the first reply calibrates the estimate for this model, with the tools left out
    assert abs(usage["context_tokens"] - usage["prompt_tokens"]) <= 0.25 * usage["prompt_tokens"]
    # the estimate made before that first request was the raw rule's, and says how far off it was
    assert usage["estimate_error"] == round(
        (usage["estimated_prompt_tokens"] - usage["prompt_tokens"]) / usage["prompt_tokens"], 3)


def test_a_second_run_is_estimated_within_a_few_percent(ws, answer, kit_run):
    usage = kit_run(ws, "run", "--json", QUESTION).json()["usage"]
    assert abs(usage["estimate_error"]) <= 0.05, usage


def test_a_warm_prompt_reads_the_servers_cache(ws, answer, kit_run):
    run = kit_run(ws, "run", "--json", QUESTION)
    usage = run.json()["usage"]
    assert usage["cache_read_tokens"] == run.counted("prompt_tokens_cached_total") > 0
    assert usage["prompt_tokens"] == run.server_prompt_tokens


def test_dropped_tools_are_warned_about(answer):
    # SmolLM2's own chat template cannot render tools: llama.cpp drops them without a word
    # (tests/data/llamacpp/tools-dropped.json shows the server's caps and the prompt it built)
    assert answer.code == 0
    err = answer.stderr.lower()
    assert "tool" in err and "template" in err, answer.stderr
    assert "kit: warning: local/smollm2: the server's chat template dropped the tool list" in answer.stderr


def test_doctor_tells_the_stock_template_from_a_tools_template(ws, answer, llama, kit_run, tmp_path_factory):
    stock = kit_run(ws, "doctor", "--json").json()
    assert any("dropped the tool list" in f["message"] for f in stock["findings"]), stock
    template = REPO / "scripts" / "llm_templates" / "chatml-tools.jinja"  # Hermes/Qwen <tool_call> layout
    with llm_server.LlamaServer(max_tokens=SERVER_CAP, temperature=0.0, chat_template=template,
                                python=SERVER_PYTHON) as tools_server:
        other = make_workspace(tmp_path_factory.mktemp("tools"), local_config(tools_server))
        found = kit_run(other, "doctor", "--json").json()
    assert not any("dropped the tool list" in f["message"] for f in found["findings"]), found
    assert not any("does not answer" in f["message"] for f in found["findings"]), found


def test_the_real_server_streams_into_events(ws, llama):
    """In process: Kit's provider layer against the real server — text deltas as they come, then
    the finish reason, the usage and the assembled reply."""
    from kit.providers.events import Finish, Reply, TextDelta, UsageUpdate
    from kit.providers.failover import FailoverClient
    from kit.workspace import Workspace

    before = llama.metrics()
    events = list(FailoverClient(Workspace.open(ws)).stream(
        [{"role": "system", "content": "You are a helpful assistant."},
         {"role": "user", "content": "Name three colours."}]))
    after = llama.metrics()
    deltas = [e.text for e in events if isinstance(e, TextDelta)]
    reply = events[-1]
    assert isinstance(reply, Reply) and len(deltas) >= 3
    assert "".join(deltas) == reply.response.text
    assert [e.reason for e in events if isinstance(e, Finish)] == [reply.response.finish_reason]
    [usage] = [e.usage for e in events if isinstance(e, UsageUpdate)]
    assert usage.completion_tokens == after["tokens_predicted_total"] - before.get("tokens_predicted_total", 0)


def test_stream_json_prints_text_as_it_arrives(ws, kit_run):
    run = kit_run(ws, "run", "--stream-json", QUESTION)
    assert run.code == 0, run.stderr
    events = [json.loads(line) for line in run.stdout.splitlines() if line.strip()]
    # the schema in docs/agent.md: turn_start, model_call, text deltas while the model speaks,
    # then one final event with the --json document
    kinds = [e["type"] for e in events]
    assert kinds[:2] == ["turn_start", "model_call"] and kinds[-1] == "final", kinds
    deltas = [e["text"] for e in events if e["type"] == "text_delta"]
    assert len(deltas) >= 3
    assert "".join(deltas) == events[-1]["reply"] and FACT_TOKEN in events[-1]["reply"]


@pytest.fixture(scope="module")
def failover(llama, tmp_path_factory, kit_run) -> tuple[KitRun, KitRun]:
    """The primary is a provider whose port refuses connections; the fallback is the real server.
    Returns the `kit run --json` and the `kit doctor --json` that follows it."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))  # bound, never listening: connect() is refused
    try:
        dead = f"http://127.0.0.1:{sock.getsockname()[1]}/v1"
        config = local_config(llama, model="dead/smollm2",
                              extra=f"  dead: {{type: openai, base_url: \"{dead}\"}}\n")
        config += "  fallbacks: [local/smollm2]\n"
        ws = make_workspace(tmp_path_factory.mktemp("failover"), config)
        return kit_run(ws, "run", "--json", QUESTION), kit_run(ws, "doctor", "--json")
    finally:
        sock.close()


def test_failover_to_the_real_server_answers(failover):
    run, _ = failover
    data = run.json()
    assert FACT_TOKEN in data["reply"], data["reply"]
    assert data["usage"]["completion_tokens"] == run.counted("tokens_predicted_total") > 0


def test_failover_cools_the_dead_primary_down(failover):
    _, doctor = failover
    text = doctor.stdout
    assert "dead/smollm2 is cooling down" in text and "after unreachable" in text, text
    assert "local/smollm2 is cooling down" not in text


def test_failover_is_visible(failover):
    run, _ = failover
    assert "dead/smollm2 unreachable" in run.stderr and "local/smollm2" in run.stderr, run.stderr
    data = run.json()
    assert data["model"] == "local/smollm2"
    assert [a["outcome"] for a in data["attempts"]] == ["unreachable", "ok"]


# ---------------------------------------------------------------------------- the recall block

STAGING_NOTE = ("# 2026-05-05\n\n- The staging database moved to host db-7 on Tuesday.\n"
                "- The deploy window is Thursday at 14:00.\n")
STAGING_QUESTION = "staging database db-7"
# what a copied recall block leaves in a reply: the tag, the old format's path:line and header
ECHO_MARKERS = ("memory-context", "memory/2026", ".md:3-3", "recalled automatically", "may be outdated")


@pytest.fixture(scope="module")
def recall_ws(llama, tmp_path_factory):
    ws = make_workspace(tmp_path_factory.mktemp("recall"), local_config(llama))
    (ws / "memory").mkdir(exist_ok=True)
    (ws / "memory" / "2026-05-05.md").write_text(STAGING_NOTE)
    return ws


def test_the_recall_block_is_not_echoed(recall_ws, kit_run):
    """The question that made SmolLM2 copy the earlier block (`Thursday, 2026-05-05.md:3-3: The
    staging database moved…`, measured with a fresh `kit init` workspace's prompt) gets the fact
    and none of the block's form. (With this suite's prompt the earlier format was not copied for
    this question either, so the comparison itself is not pinned here: docs/agent.md.)"""
    run = kit_run(recall_ws, "run", "--json", STAGING_QUESTION)
    reply = run.json()["reply"]
    assert "db-7" in reply, reply  # the recalled fact reached the answer
    assert not [marker for marker in ECHO_MARKERS if marker in reply], reply
