"""Memory benchmark (spec §11): full index vs raw encode, incremental re-index, warm search.

    python bench/memory.py [--notes N] [--bullets B] [--search-chunks C] [--queries Q] [--json]

1. A deterministic corpus of N daily notes with B distinct claims each (default 60 × 10) plus a few
   long topic files is indexed from scratch with the real model; the same texts are then encoded by
   sentence-transformers directly, alternating R times (medians and bests). full-index / raw-encode is the
   indexing overhead (target ≤ 1.15).
2. One claim in one note is edited and the index re-synced: only that claim is embedded again.
3. The workspace grows to about C chunks (default 10,000) with more notes that repeat claims of the
   first corpus (so the embedding cache serves them and the model is not the bottleneck of a
   benchmark about search), and search is timed warm, with and without the query embedding.
4. numpy vs torch backends (memory.embedding.backend): encode throughput on the same texts, and the
   wall time of a cold `kit memory search` process on the grown workspace (median of --cold-runs,
   alternating), where torch pays for its import and model load and numpy does not.
Prints medians; never asserts on speed.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import date, timedelta
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

PEOPLE = ["Alice", "Bob", "Priya", "Dana", "Grandma", "the landlord", "Ben", "Mei", "the new intern", "Omar"]
THINGS = ["the staging cluster", "the Lisbon client", "the release train", "the billing service", "the Q3 budget",
          "the sourdough starter", "the on-call rota", "the design review", "the garden shed", "the car insurance"]
VERBS = ["prefers", "asked about", "decided on", "is blocked by", "scheduled", "rejected", "approved",
         "wants to revisit", "forgot about", "finally fixed"]
DETAILS = ["oat milk in a flat white", "Thursday deploys after standup", "Postgres 16 on port 5433",
           "the invoice template in Finance", "lilies rather than roses", "a rollback plan pinned for 48 hours",
           "peanut-free cake for the party", "the 14:00 one-to-one slot", "two reviewers per change",
           "quiet hours after 19:00", "the blue folder in the hallway", "a dentist visit next Tuesday"]
QUERIES = ["what milk does Alice like", "when do we deploy", "database port", "who approved the budget",
           "party food allergies", "quiet hours", "dentist appointment", "rollback plan", "flowers for Grandma",
           "invoice template", "on-call rota changes", "sourdough", "car insurance renewal", "design review feedback",
           "staging cluster blocked", "Lisbon client decision", "meeting slot at two", "reviewers per change",
           "garden shed", "hallway folder"]


def claim(rng: random.Random, n: int) -> str:
    return (f"{rng.choice(PEOPLE)} {rng.choice(VERBS)} {rng.choice(THINGS)}: {rng.choice(DETAILS)} "
            f"(ref {n}, {rng.choice(DETAILS)}).")


def write_note(root: Path, day: date, claims: list[str]) -> str:
    rel = f"memory/{day.isoformat()}.md"
    lines = [f"# {day.isoformat()}", "", *(f"- {c}" for c in claims)]
    (root / rel).write_text("\n".join(lines) + "\n", encoding="utf-8")
    return rel


def make_corpus(root: Path, notes: int, bullets: int, seed: int = 7) -> tuple[list[str], list[str]]:
    """Daily notes of `bullets` distinct claims each, plus long topic files: (note paths, claims)."""
    rng = random.Random(seed)
    start = date(2024, 1, 1)
    paths, claims = [], []
    counter = 0
    for i in range(notes):
        batch = []
        for _ in range(bullets):
            counter += 1
            batch.append(claim(rng, counter))
        claims.extend(batch)
        paths.append(write_note(root, start + timedelta(days=i), batch))
    topics = root / "memory" / "topics"
    topics.mkdir(parents=True, exist_ok=True)
    for t in range(max(1, notes // 100)):
        parts = [f"# Topic {t}", ""]
        for s in range(6):
            parts += [f"## Section {s}", "", " ".join(claim(rng, counter + k) for k in range(8)), "",
                      "```sh", *(f"make step-{k} TARGET={t}" for k in range(6)), "```", ""]
        (topics / f"topic-{t:03d}.md").write_text("\n".join(parts), encoding="utf-8")
    return paths, claims


def grow_corpus(root: Path, claims: list[str], first: int, notes: int, bullets: int, seed: int = 11) -> None:
    """More daily notes (after day `first`) repeating claims in new combinations."""
    rng = random.Random(seed)
    start = date(2024, 1, 1)
    for i in range(first, first + notes):
        write_note(root, start + timedelta(days=i), rng.sample(claims, bullets))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--notes", type=int, default=60)
    parser.add_argument("--runs", type=int, default=5, help="alternating raw-encode / full-index runs")
    parser.add_argument("--bullets", type=int, default=10)
    parser.add_argument("--search-chunks", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=20)
    parser.add_argument("--cold-runs", type=int, default=3, help="cold `kit memory search` processes per backend")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp) / "home"
        os.environ.update(HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"),
                          XDG_DATA_HOME=str(home / ".local/share"), KIT_NOW="2026-12-01T09:00:00+00:00")
        from kit.init import init_workspace
        from kit.memory.chunker import chunk_markdown
        from kit.memory.embeddings import load_embedder
        from kit.memory.service import Memory
        from kit.workspace import Workspace

        root = Path(tmp) / "ws"
        init_workspace(root)
        paths, claims = make_corpus(root, args.notes, args.bullets)
        ws = Workspace.open(root)
        section = dict(ws.config.get("memory.embedding", {}) or {})
        embedder = load_embedder({**section, "backend": "torch"})  # sentence-transformers, for sections 1-3
        if embedder is None:
            print("sentence-transformers is not installed: nothing to benchmark", file=sys.stderr)
            return 1
        embedder.encode(["warm up the model"])  # load time is not indexing time
        model = embedder.model

        # the texts a full index embeds: every chunk's embed_text, deduplicated like the cache does
        texts: dict[str, str] = {}
        t0 = time.perf_counter()
        for rel in ["MEMORY.md", *sorted(str(p.relative_to(root)) for p in (root / "memory").rglob("*.md"))]:
            for chunk in chunk_markdown(rel, (root / rel).read_text(encoding="utf-8")):
                texts.setdefault(chunk.hash, chunk.embed_text)
        chunk_s = time.perf_counter() - t0
        corpus = list(texts.values())

        def raw_encode() -> float:
            start = time.perf_counter()
            model.encode(corpus, batch_size=embedder.batch_size, normalize_embeddings=True,
                         convert_to_numpy=True, show_progress_bar=False)
            return time.perf_counter() - start

        # alternate raw encode and full index from scratch: the machine's load drifts, medians don't
        raw_runs, full_runs = [], []
        mem = None
        for _ in range(args.runs):
            raw_runs.append(raw_encode())
            if mem is not None:
                mem.close()
            for suffix in ("", "-wal", "-shm"):
                Path(str(ws.kit_dir / "index.db") + suffix).unlink(missing_ok=True)
            mem = Memory(ws, embedder=embedder)
            start = time.perf_counter()
            full = mem.sync()
            full_runs.append(time.perf_counter() - start)
        raw_s = statistics.median(raw_runs)
        full_s = statistics.median(full_runs)

        # incremental: edit one claim in one note
        target = root / paths[len(paths) // 2]
        text = target.read_text(encoding="utf-8").split("\n")
        text[4] = "- Edited: the spare key now lives under the blue flowerpot."
        target.write_text("\n".join(text), encoding="utf-8")
        start = time.perf_counter()
        inc = mem.sync()
        inc_s = time.perf_counter() - start

        # grow to about --search-chunks chunks from cached claims, then time search
        chunks_now = mem.status()["chunks"]
        extra_notes = max(0, (args.search_chunks - chunks_now) // args.bullets)
        grow_corpus(root, claims, args.notes, extra_notes, args.bullets)
        start = time.perf_counter()
        grown = mem.sync()
        grow_s = time.perf_counter() - start

        # warm search: the first run of a query pays for its embedding, the repeat does not
        queries = [QUERIES[i % len(QUERIES)] + (f" {i}" if i >= len(QUERIES) else "") for i in range(args.queries)]
        mem.search("warm up the search", refresh=False)
        cold_q, warm_q, embed_q = [], [], []
        for q in queries:
            start = time.perf_counter()
            mem.search(q, refresh=False)
            cold_q.append(time.perf_counter() - start)
            start = time.perf_counter()
            mem.search(q, refresh=False)
            warm_q.append(time.perf_counter() - start)
            start = time.perf_counter()
            embedder.encode([q])
            embed_q.append(time.perf_counter() - start)
        status = mem.status()

        # 4. numpy vs torch: encode throughput on the bench texts, cold `kit memory search` processes
        numpy_embedder = load_embedder({**section, "backend": "numpy"})
        numpy_encode_s = numpy_top = torch_top = None
        cold: dict[str, list[float]] = {"numpy": [], "torch": []}
        if numpy_embedder is not None:
            numpy_embedder.encode(["warm up the model"])
            start = time.perf_counter()
            numpy_embedder.encode(corpus)
            numpy_encode_s = time.perf_counter() - start
            mem.close()
            for _ in range(args.cold_runs):
                for backend in ("numpy", "torch"):
                    env = {**os.environ, "KIT_MEMORY__EMBEDDING__BACKEND": backend}
                    command = [sys.executable, "-m", "kit", "memory", "search", "--json", "-w", str(root),
                               "what milk does Alice like"]
                    start = time.perf_counter()
                    done = subprocess.run(command, env=env, capture_output=True, text=True, check=True)
                    cold[backend].append(time.perf_counter() - start)
                    found = json.loads(done.stdout)
                    assert found["mode"] == "hybrid", found
                    top = [(r["path"], r["start_line"], round(r["score"], 4)) for r in found["results"][:3]]
                    numpy_top, torch_top = (top, torch_top) if backend == "numpy" else (numpy_top, top)

    report = {
        "notes": args.notes,
        "chunks": full.chunks,
        "embedded_texts": full.embedded,
        "chunking_s": round(chunk_s, 3),
        "full_index_s": round(full_s, 3),
        "raw_encode_s": round(raw_s, 3),
        "raw_encode_runs_s": [round(x, 3) for x in raw_runs],
        "full_index_runs_s": [round(x, 3) for x in full_runs],
        "full_index_over_raw_encode": round(full_s / raw_s, 3),
        "best_full_over_best_raw": round(min(full_runs) / min(raw_runs), 3),
        "raw_texts_per_s": round(len(corpus) / raw_s, 1),
        "incremental_s": round(inc_s, 3),
        "incremental_embedded": inc.embedded,
        "incremental_updated": list(inc.updated),
        "grow_notes": extra_notes,
        "grow_sync_s": round(grow_s, 3),
        "grow_embedded": grown.embedded,
        # the index's own cost per chunk (read, chunk, SQLite + FTS writes) measured without the model,
        # and the ratio it implies: robust against the load drift that makes the timed ratio noisy
        "overhead_ms_per_chunk": round(grow_s / max(1, grown.chunks) * 1000, 3),
        "implied_ratio": round((raw_s + grow_s / max(1, grown.chunks) * full.chunks) / raw_s, 3),
        "search_chunks": status["chunks"],
        "search_with_query_embedding_ms_median": round(statistics.median(cold_q) * 1000, 2),
        "search_warm_ms_median": round(statistics.median(warm_q) * 1000, 2),
        "query_embedding_ms_median": round(statistics.median(embed_q) * 1000, 2),
        "numpy_encode_s": None if numpy_encode_s is None else round(numpy_encode_s, 3),
        "numpy_texts_per_s": None if numpy_encode_s is None else round(len(corpus) / numpy_encode_s, 1),
        "cold_search_numpy_s_median": round(statistics.median(cold["numpy"]), 2) if cold["numpy"] else None,
        "cold_search_torch_s_median": round(statistics.median(cold["torch"]), 2) if cold["torch"] else None,
        "cold_search_runs_s": {k: [round(x, 2) for x in v] for k, v in cold.items()},
        "cold_search_same_top3": numpy_top == torch_top if numpy_top is not None else None,
    }
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print(f"memory bench: {report['notes']} notes, {report['chunks']} chunks "
              f"({report['embedded_texts']} distinct texts embedded)")
        print(f"  full index            {report['full_index_s']:8.2f} s   (median; runs {report['full_index_runs_s']})")
        print(f"  raw st.encode         {report['raw_encode_s']:8.2f} s   ({report['raw_texts_per_s']} texts/s; "
              f"median; runs {report['raw_encode_runs_s']})")
        print(f"  ratio index/encode    {report['full_index_over_raw_encode']:8.3f}     (medians; best-of-runs "
              f"{report['best_full_over_best_raw']:.3f}; target ≤ 1.15)")
        print(f"  index overhead        {report['overhead_ms_per_chunk']:8.3f} ms/chunk without the model "
              f"(implied ratio {report['implied_ratio']:.3f})")
        print(f"  incremental re-index  {report['incremental_s'] * 1000:8.1f} ms  "
              f"({report['incremental_embedded']} text embedded, {len(report['incremental_updated'])} file)")
        print(f"  grow to {report['search_chunks']} chunks: +{extra_notes} notes synced in {report['grow_sync_s']:.2f} s "
              f"({report['grow_embedded']} embedded: repeated claims come from the cache)")
        print(f"  search, warm          {report['search_warm_ms_median']:8.2f} ms median (query vector cached)")
        print(f"  search + embed query  {report['search_with_query_embedding_ms_median']:8.2f} ms median "
              f"(query embedding alone {report['query_embedding_ms_median']:.2f} ms)")
        if report["numpy_encode_s"] is not None:
            print(f"  numpy vs torch        encode {report['numpy_texts_per_s']} vs {report['raw_texts_per_s']} texts/s; "
                  f"cold `kit memory search` {report['cold_search_numpy_s_median']:.2f} s vs "
                  f"{report['cold_search_torch_s_median']:.2f} s (median of {args.cold_runs}; "
                  f"same top 3: {report['cold_search_same_top3']})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
