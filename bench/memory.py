"""Memory benchmark (spec §11, issue 14): index throughput against the model's own floor, ONNX vs
torch, incremental, cold and warm search, int8, and peak RSS of a 1,000-note index.

    python bench/memory.py [--notes N] [--runs R] [--rss-notes M] [--json] [--quick]

1. A deterministic corpus of N daily notes with B distinct claims each (default 60 × 10) plus a few
   long topic files. For each backend (onnx, the default; torch, sentence-transformers) the same
   texts are encoded raw (the embedder's own encode of every distinct chunk text: the floor) and
   indexed from scratch, alternating R times: medians and CPU seconds. full index / raw encode is
   the index's overhead (target ≤ 1.15); torch / onnx full index is the backend's gain (target ≥ 2).
2. One claim in one note is edited and the index re-synced: only that claim is embedded again.
3. The workspace grows to about C chunks (default 10,000) with notes repeating earlier claims (the
   embedding cache serves them), and search is timed warm, with and without the query embedding.
4. Cold `kit memory search` processes per backend (onnx, numpy, torch; median of --cold-runs,
   alternating): a new query (the model loads), and the same query again (its vector is kept in
   the index: no model load). Then the backends' top 3 for one query, each embedding it itself:
   the same hits, or hits whose scores differ by float noise only.
5. int8 (`memory.embedding.quantize: int8`): encode time against fp32 on the same texts, and how
   many of fp32's top 10 chunks int8 still finds for the bench queries (recall@10 against fp32).
6. A fresh `kit memory index` of M notes (default 1,000) in its own process: wall and CPU time,
   peak RSS (target < 400 MiB), and whether torch was imported (it must not be).
Prints medians; never asserts on speed.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sqlite3
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

# a child process that runs `kit` and reports, on its last stderr line, whether torch was imported
# the backends' top 3 are compared on one query. Their vectors agree to cosine ≥ 0.9999999, so
# scores closer than one unit of `--json`'s 4th decimal are float noise: such hits may swap places
AGREE_QUERY = "what milk does Alice like"
SCORE_NOISE = 1e-4
RUN_KIT = (
    "import runpy, sys\n"
    "sys.argv = ['kit', *sys.argv[1:]]\n"
    "try:\n    runpy.run_module('kit', run_name='__main__')\n"
    "finally:\n    print('torch imported: %s' % ('torch' in sys.modules), file=sys.stderr)\n"
)


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


def top3_agreement(tops: dict[str, list], noise: float = SCORE_NOISE) -> tuple[float, bool]:
    """(the largest score difference at one position, whether the lists agree): the same hit at each
    position, or hits whose scores differ by float noise only (a near tie the backends may order
    either way)."""
    lists = list(tops.values())
    delta, same = 0.0, True
    for other in lists[1:]:
        for (path, line, score), (o_path, o_line, o_score) in zip(lists[0], other, strict=False):
            delta = max(delta, abs(score - o_score))
            same = same and ((path, line) == (o_path, o_line) or abs(score - o_score) <= noise)
    return round(delta, 9), same and len({len(t) for t in lists}) == 1


def timed(fn) -> tuple[float, float, object]:
    """(wall seconds, CPU seconds of this process, result)."""
    wall, cpu = time.perf_counter(), time.process_time()
    result = fn()
    return time.perf_counter() - wall, time.process_time() - cpu, result


def run_child(command: list[str], env: dict[str, str]) -> dict[str, object]:
    """Run a child process: its wall time, its own CPU seconds and peak RSS (os.wait4), its output."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        start = time.perf_counter()
        proc = subprocess.Popen(command, env=env, stdout=out, stderr=err, text=True)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        return {"wall": wall, "returncode": proc.returncode, "stdout": out.read(), "stderr": err.read(),
                "cpu": usage.ru_utime + usage.ru_stime, "rss_mib": usage.ru_maxrss / 1024}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--notes", type=int, default=60)
    parser.add_argument("--runs", type=int, default=3, help="alternating raw-encode / full-index runs per backend")
    parser.add_argument("--bullets", type=int, default=10)
    parser.add_argument("--search-chunks", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=20)
    parser.add_argument("--cold-runs", type=int, default=3, help="cold `kit memory search` processes per backend")
    parser.add_argument("--rss-notes", type=int, default=1000, help="notes in the peak-RSS index (0: skip)")
    parser.add_argument("--no-torch", action="store_true", help="skip the torch backend")
    parser.add_argument("--quick", action="store_true", help="small sizes, for a smoke run")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if args.quick:
        args.notes, args.runs, args.search_chunks, args.cold_runs, args.rss_notes = 12, 1, 600, 1, 40

    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp) / "home"
        os.environ.update(HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"), XDG_CACHE_HOME=str(home / ".cache"),
                          XDG_DATA_HOME=str(home / ".local/share"), KIT_NOW="2026-12-01T09:00:00+00:00")
        from kit.init import init_workspace
        from kit.memory.chunker import chunk_markdown
        from kit.memory.embeddings import Embedders, available_cores, torch_problem
        from kit.memory.service import Memory
        from kit.workspace import Workspace

        report: dict[str, object] = {"cores": available_cores(), "load_before": os.getloadavg()[0]}
        root = Path(tmp) / "ws"
        init_workspace(root)
        paths, claims = make_corpus(root, args.notes, args.bullets)
        # 6 (run first, while this process is small: a child's peak RSS counts what it shares with the
        # parent until exec). A fresh 1,000-note `kit memory index` in its own process; torch import check
        if args.rss_notes:
            # build the ONNX graph (once per user, normally at first use) before anything is timed
            subprocess.run([sys.executable, "-c", "from pathlib import Path; from kit.memory.embeddings import "
                            "resolve_model; from kit.memory.onnx_export import ensure_model; "
                            "ensure_model(Path(resolve_model('all-MiniLM-L6-v2')))"], check=True)
            big = Path(tmp) / "big"
            init_workspace(big)
            make_corpus(big, args.rss_notes, args.bullets, seed=23)
            done = run_child([sys.executable, "-c", RUN_KIT, "memory", "index", "--json", "-w", str(big)],
                             dict(os.environ))
            if done["returncode"] != 0:
                raise SystemExit(f"kit memory index failed: {done['stderr']}")
            result = json.loads(done["stdout"])
            report.update(rss_notes=args.rss_notes, rss_chunks=result["chunks"], rss_embedded=result["embedded"],
                          rss_index_s=round(done["wall"], 2), rss_index_cpu_s=round(done["cpu"], 2),
                          rss_peak_mib=round(done["rss_mib"], 1),
                          rss_torch_imported=done["stderr"].strip().endswith("torch imported: True"))
        models = Embedders()
        ws = Workspace.open(root, embedders=models)
        section = dict(ws.config.get("memory.embedding"))
        backends = {"onnx": models.get({**section, "backend": "onnx"})}
        if not args.no_torch and torch_problem(section) is None:
            backends["torch"] = models.get({**section, "backend": "torch"})
        if backends["onnx"] is None:
            print("onnxruntime is not installed: nothing to benchmark", file=sys.stderr)
            return 1
        for embedder in backends.values():
            embedder.encode(["warm up the model"])  # load (and the one-time ONNX build) is not indexing time

        # the texts a full index embeds: every chunk's embed_text, deduplicated like the cache does
        texts: dict[str, str] = {}
        for rel in ["MEMORY.md", *sorted(str(p.relative_to(root)) for p in (root / "memory").rglob("*.md"))]:
            for chunk in chunk_markdown(rel, (root / rel).read_text(encoding="utf-8")):
                texts.setdefault(chunk.hash, chunk.embed_text)
        corpus = list(texts.values())

        def full_index(embedder) -> Memory:
            for suffix in ("", "-wal", "-shm"):
                Path(str(ws.kit_dir / "index.db") + suffix).unlink(missing_ok=True)
            (ws.kit_dir / "index-vectors.bin").unlink(missing_ok=True)
            mem = Memory(ws, embedder=embedder)
            mem.sync()
            return mem

        # 1. alternate raw encode and full index, backend by backend, round by round
        runs: dict[str, dict[str, list[float]]] = {b: {"raw": [], "raw_cpu": [], "full": [], "full_cpu": []}
                                                   for b in backends}
        mem = None
        for _ in range(args.runs):
            for name, embedder in reversed(backends.items()):  # onnx last: its index is the one kept
                wall, cpu, _ = timed(lambda e=embedder: e.encode(corpus))
                runs[name]["raw"].append(wall)
                runs[name]["raw_cpu"].append(cpu)
                if mem is not None:
                    mem.close()
                wall, cpu, mem = timed(lambda e=embedder: full_index(e))
                runs[name]["full"].append(wall)
                runs[name]["full_cpu"].append(cpu)
        med = {b: {k: statistics.median(v) for k, v in r.items()} for b, r in runs.items()}
        report.update(notes=args.notes, chunks=mem.status().chunks, distinct_texts=len(corpus),
                      runs={b: {k: [round(x, 3) for x in v] for k, v in r.items()} for b, r in runs.items()},
                      medians={b: {k: round(x, 3) for k, x in m.items()} for b, m in med.items()})
        report["onnx_full_over_raw"] = round(med["onnx"]["full"] / med["onnx"]["raw"], 3)
        report["onnx_full_over_raw_best"] = round(min(runs["onnx"]["full"]) / min(runs["onnx"]["raw"]), 3)
        report["onnx_texts_per_s"] = round(len(corpus) / med["onnx"]["raw"], 1)
        if "torch" in med:
            report["torch_full_over_onnx_full"] = round(med["torch"]["full"] / med["onnx"]["full"], 2)
            report["torch_full_over_onnx_full_cpu"] = round(med["torch"]["full_cpu"] / med["onnx"]["full_cpu"], 2)
            report["torch_full_over_raw"] = round(med["torch"]["full"] / med["torch"]["raw"], 3)
            report["torch_texts_per_s"] = round(len(corpus) / med["torch"]["raw"], 1)

        # 2. incremental: edit one claim in one note
        target = root / paths[len(paths) // 2]
        lines = target.read_text(encoding="utf-8").split("\n")
        lines[4] = "- Edited: the spare key now lives under the blue flowerpot."
        target.write_text("\n".join(lines), encoding="utf-8")
        wall, _, inc = timed(mem.sync)
        report.update(incremental_s=round(wall, 4), incremental_embedded=inc.embedded,
                      incremental_files=len(inc.updated))
        wall, _, idle = timed(mem.sync)
        report.update(idle_sync_s=round(wall, 4), idle_sync_embedded=idle.embedded)

        # 3. grow to about --search-chunks chunks from cached claims, then time warm search
        extra_notes = max(0, (args.search_chunks - mem.status().chunks) // args.bullets)
        grow_corpus(root, claims, args.notes, extra_notes, args.bullets)
        wall, _, grown = timed(mem.sync)
        queries = [QUERIES[i % len(QUERIES)] + (f" {i}" if i >= len(QUERIES) else "") for i in range(args.queries)]
        mem.search("warm up the search", refresh=False)
        first_q, warm_q, embed_q = [], [], []
        for q in queries:
            first_q.append(timed(lambda q=q: mem.search(q, refresh=False))[0])
            warm_q.append(timed(lambda q=q: mem.search(q, refresh=False))[0])
            embed_q.append(timed(lambda q=q: backends["onnx"].encode([q]))[0])
        status = mem.status()
        report.update(grow_notes=extra_notes, grow_sync_s=round(wall, 3), grow_embedded=grown.embedded,
                      overhead_ms_per_chunk=round(wall / max(1, grown.chunks) * 1000, 3),
                      search_chunks=status.chunks,
                      search_warm_ms=round(statistics.median(warm_q) * 1000, 2),
                      search_with_query_embedding_ms=round(statistics.median(first_q) * 1000, 2),
                      query_embedding_ms=round(statistics.median(embed_q) * 1000, 2))
        mem.close()

        # 4. cold `kit memory search` processes, per backend: a new query, then the same query again
        cold_backends = ["onnx", "numpy", *(["torch"] if "torch" in backends else [])]
        cold: dict[str, dict[str, list[float]]] = {b: {"new": [], "repeat": []} for b in cold_backends}
        torch_in_cold: dict[str, bool] = {}

        def cold_search(backend: str, query: str) -> dict:
            env = {**os.environ, "KIT_MEMORY__EMBEDDING__BACKEND": backend}
            done = run_child([sys.executable, "-c", RUN_KIT, "memory", "search", "--json", "-w", str(root), query], env)
            if done["returncode"] != 0:
                raise SystemExit(f"kit memory search failed: {done['stderr']}")
            done["found"] = found = json.loads(done["stdout"])
            assert found["mode"] == "hybrid", found
            # any of the backend's processes (the last one alone is a repeat that loads no model)
            imported = done["stderr"].strip().endswith("torch imported: True")
            torch_in_cold[backend] = torch_in_cold.get(backend, False) or imported
            return done

        for r in range(args.cold_runs):
            for backend in cold_backends:
                # a query of its own per backend and run: the backends share one model_id, so a query
                # another backend searched would come from the index's query vectors, loading no model
                query = f"what milk does Alice like ({backend} run {r})"
                for kind in ("new", "repeat"):
                    cold[backend][kind].append(cold_search(backend, query)["wall"])
        report["cold_search_s"] = {b: {k: round(statistics.median(v), 3) for k, v in c.items()} for b, c in cold.items()}
        report["cold_search_runs_s"] = {b: {k: [round(x, 3) for x in v] for k, v in c.items()} for b, c in cold.items()}
        # the backends' top 3 for ONE query, each embedding it itself (the cached query vectors are
        # forgotten before each): comparing the timing runs' queries above compared different texts
        tops: dict[str, list] = {}
        for backend in cold_backends:
            with sqlite3.connect(root / ".kit" / "index.db") as db:
                db.execute("DELETE FROM query_vectors")
            found = cold_search(backend, AGREE_QUERY)["found"]
            tops[backend] = [(x["path"], x["start_line"], x["score"]) for x in found["results"][:3]]
        report["cold_top3"] = tops
        report["cold_top3_score_delta"], report["cold_same_top3"] = top3_agreement(tops)
        report["cold_torch_imported"] = torch_in_cold

        # numpy encode throughput on the same texts (the fallback when onnxruntime is missing)
        numpy_backend = models.get({**section, "backend": "numpy"})
        if numpy_backend is not None:
            numpy_backend.encode(["warm up"])
            wall, cpu, _ = timed(lambda: numpy_backend.encode(corpus))
            report["numpy_texts_per_s"] = round(len(corpus) / wall, 1)

        # 5. int8 against fp32: encode time (alternating) and recall@10 of fp32's top 10
        int8 = models.get({**section, "backend": "onnx", "quantize": "int8"})
        int8.encode(["warm up"])
        fp32_runs, int8_runs = [], []
        for _ in range(max(1, args.runs)):
            fp32_runs.append(timed(lambda: backends["onnx"].encode(corpus))[0])
            int8_runs.append(timed(lambda: int8.encode(corpus))[0])
        import numpy as np

        exact = backends["onnx"].encode(corpus)
        approx = int8.encode(corpus)
        eval_queries = QUERIES + [c.split(":")[0] for c in claims[:: max(1, len(claims) // 30)]][:30]
        q_exact, q_approx = backends["onnx"].encode(eval_queries), int8.encode(eval_queries)
        overlap = []
        for qe, qa in zip(q_exact, q_approx, strict=True):
            truth = set(np.argsort(-(exact @ qe))[:10])
            got = set(np.argsort(-(approx @ qa))[:10])
            overlap.append(len(truth & got) / 10)
        report.update(int8_encode_over_fp32=round(statistics.median(int8_runs) / statistics.median(fp32_runs), 3),
                      int8_recall_at_10_vs_fp32=round(float(np.mean(overlap)), 3),
                      int8_vector_cosine_min=round(float((exact * approx).sum(axis=1).min()), 4),
                      int8_queries=len(eval_queries))

        report["load_after"] = os.getloadavg()[0]

    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    print_report(report, args)
    return 0


def print_report(r: dict, args) -> None:
    m = r["medians"]
    print(f"memory bench: {r['notes']} notes, {r['chunks']} chunks ({r['distinct_texts']} distinct texts); "
          f"{r['cores']} cores, load {r['load_before']:.1f} → {r['load_after']:.1f}")
    for b in m:
        print(f"  {b:5} raw encode    {m[b]['raw']:7.2f} s  ({m[b]['raw_cpu']:.2f} CPU s; "
              f"{r['distinct_texts'] / m[b]['raw']:.1f} texts/s)   full index {m[b]['full']:7.2f} s "
              f"({m[b]['full_cpu']:.2f} CPU s)   runs {r['runs'][b]['full']}")
    print(f"  ratio onnx full index / raw encode   {r['onnx_full_over_raw']:.3f}  (medians; best-of-runs "
          f"{r['onnx_full_over_raw_best']:.3f}; target ≤ 1.15)")
    if "torch_full_over_onnx_full" in r:
        print(f"  ratio torch / onnx full index        {r['torch_full_over_onnx_full']:.2f}× wall, "
              f"{r['torch_full_over_onnx_full_cpu']:.2f}× CPU  (target ≥ 2)")
    print(f"  incremental re-index   {r['incremental_s'] * 1000:8.1f} ms  ({r['incremental_embedded']} text embedded, "
          f"{r['incremental_files']} file); nothing changed: {r['idle_sync_s'] * 1000:.1f} ms, "
          f"{r['idle_sync_embedded']} embedded")
    print(f"  grow to {r['search_chunks']} chunks: +{r['grow_notes']} notes synced in {r['grow_sync_s']:.2f} s "
          f"({r['grow_embedded']} embedded; {r['overhead_ms_per_chunk']:.3f} ms/chunk without the model)")
    print(f"  search, warm           {r['search_warm_ms']:8.2f} ms median (query vector cached)")
    print(f"  search + embed query   {r['search_with_query_embedding_ms']:8.2f} ms median "
          f"(query embedding alone {r['query_embedding_ms']:.2f} ms)")
    for b, c in r["cold_search_s"].items():
        print(f"  cold `kit memory search` {b:5}  new query {c['new']:.2f} s, same query again {c['repeat']:.2f} s "
              f"(median of {args.cold_runs}; torch imported by any: {r['cold_torch_imported'][b]})")
    print(f"  cold searches agree on the top 3 of {AGREE_QUERY!r}: {r['cold_same_top3']} (largest score "
          f"difference {r['cold_top3_score_delta']:.2g}; float noise ≤ {SCORE_NOISE:g})")
    for b, top in r["cold_top3"].items():
        print(f"    {b:5} " + "; ".join(f"{p}:{line} {score:.6f}" for p, line, score in top))
    if "numpy_texts_per_s" in r:
        print(f"  numpy encode           {r['numpy_texts_per_s']} texts/s (fallback without onnxruntime)")
    print(f"  int8 / fp32 encode     {r['int8_encode_over_fp32']:.3f}  (medians); recall@10 of fp32's top 10: "
          f"{r['int8_recall_at_10_vs_fp32']:.3f} over {r['int8_queries']} queries; min cosine "
          f"{r['int8_vector_cosine_min']:.4f}")
    if "rss_peak_mib" in r:
        print(f"  `kit memory index` of {r['rss_notes']} notes ({r['rss_chunks']} chunks, {r['rss_embedded']} embedded): "
              f"{r['rss_index_s']:.1f} s, {r['rss_index_cpu_s']:.1f} CPU s, peak RSS {r['rss_peak_mib']:.0f} MiB "
              f"(target < 400); torch imported: {r['rss_torch_imported']}")


if __name__ == "__main__":
    sys.exit(main())
