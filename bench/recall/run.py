"""Long-term recall benchmark (issue 13): does search find the evidence in a year of daily notes?

    python bench/recall/run.py [--workdir DIR] [--sweep] [--misses] [--quantize int8] [--json]

Three personas (personas.py) each get a year of generated daily notes (corpus.py): facts, lines that
only look like answers, everyday noise, CJK notes. Their questions come in four kinds: single fact,
multi-hop across days, temporal ("when did…", "…before X", "in March", "last summer", 上个月) and
changed facts (the latest value must win). The same corpus is also written one year further back
(every note's age grows by a year), and the questions are asked on the same day, 2026-06-15, in the
words a person would use then ("in March last year").

Every single-fact question is also asked paraphrased (the `paraphrase` column): in other words that
share no content word with its evidence, by the rule in personas.PARAPHRASES (names aside), checked
by the generator. `all` averages the original four kinds only, so it compares with earlier runs.

For every question and method the top 5 and top 10 results are checked against the evidence lines:
recall = evidence groups found / groups, averaged per kind. `latest` is, for changed facts, the
share of questions where the newest value ranks above every stale one in the top 10.

Methods, all over the same chunks and the same MiniLM vectors:
  kit             Kit's search with its defaults (kit.memory.search.hybrid_search)
  kit, no recency the same with the recency prior off
  kit before      the search before issue 13 (legacy.py), and `kit before, no decay` with half_life 0
  bm25            plain FTS5 bm25() over the query's words (stop words dropped) joined with OR;
                  CJK through the trigram table, also OR
  vector          plain cosine top-k over the chunk vectors

--sweep prints recall for a grid of Kit's recency/normalisation settings (how the defaults were
chosen). Quality only: speed is bench/memory.py's job (the timings printed here are indicative).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
import unicodedata
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from corpus import TODAY, AskedQuestion, build  # noqa: E402
from personas import PERSONAS  # noqa: E402

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ["KIT_NOW"] = f"{TODAY.isoformat()}T09:00:00+00:00"

KINDS = ("single", "multi-hop", "temporal", "changed")  # the original set: `all` averages these
EXTRA = ("paraphrase",)  # single facts asked in other words (personas.PARAPHRASES): a column of its own
VARIANTS = (("base", 0), ("shifted", 1))  # (name, years back)
STOP = frozenset("""a an the and or but of to in on at for with by from into onto about as is are was were be been
being am i me my mine we us our ours you your yours he him his she her hers it its they them their theirs this that
these those what which who whom whose when where why how do does did done doing have has had having can could will
would should shall may might must not no so than then there here s t d ll re ve m just also again ever very""".split())

Hit = tuple[str, int, int]  # path, start_line, end_line
Method = Callable[[object, str, int], list[Hit]]


# --------------------------------------------------------------------------- the methods


def _kit(settings_changes: dict) -> Method:
    from kit.memory.blas import OneBlasThread

    blas = OneBlasThread()  # as Memory.search runs it

    def search(mem, query: str, k: int) -> list[Hit]:
        from kit.memory.search import hybrid_search

        settings = dataclasses.replace(mem.ws.config.memory.search, **settings_changes)
        idx = mem.index()
        with blas.one_thread():
            result = hybrid_search(idx, query, settings, today=TODAY, limit=k,
                                   vectors=mem.vector_set(idx, mem.embedder.model_id), encode_query=mem.encode_query)
        return [(h.path, h.start_line, h.end_line) for h in result.results]
    return search


def _legacy(settings_changes: dict) -> Method:
    def search(mem, query: str, k: int) -> list[Hit]:
        import legacy

        settings = dataclasses.replace(legacy.SearchSettings(), **settings_changes)
        idx = mem.index()
        result = legacy.hybrid_search(idx, query, settings, today=TODAY, limit=k,
                                      vectors=mem.vector_set(idx, mem.embedder.model_id), encode_query=mem.encode_query)
        return [(h.path, h.start_line, h.end_line) for h in result.results]
    return search


def _terms(query: str) -> tuple[list[str], list[str]]:
    """(words, CJK runs) of a query, lower-cased, in order."""
    import re

    from kit.memory.chunker import has_cjk

    words, cjk = [], []
    for token in re.findall(r"[^\W_]+", unicodedata.normalize("NFKC", query).lower()):
        for run in re.findall(r"[\u3400-\u9fff]+|[^\u3400-\u9fff]+", token):
            (cjk if has_cjk(run) else words).append(run)
    return words, cjk


def _quote(term: str) -> str:
    return '"' + term.replace('"', '""') + '"'


def bm25(mem, query: str, k: int) -> list[Hit]:
    idx = mem.index()
    words, cjk = _terms(query)
    words = [w for w in words if w not in STOP]
    if cjk:  # the unicode61 table keeps a CJK run as one token: use the trigram table, like any FTS5 user
        grams = [run[i : i + 3] for run in cjk for i in range(len(run) - 2)] + [w for w in words if len(w) >= 3]
        table, terms = "chunks_tri", list(dict.fromkeys(grams))
    else:
        table, terms = "chunks_fts", list(dict.fromkeys(words))
    if not terms:
        return []
    rows = idx.conn.execute(
        f"SELECT rowid FROM {table} WHERE {table} MATCH ? ORDER BY bm25({table}), rowid LIMIT ?",
        (" OR ".join(map(_quote, terms)), k),
    ).fetchall()
    chunks = idx.chunk_rows(r[0] for r in rows)
    return [(chunks[r[0]].path, chunks[r[0]].start_line, chunks[r[0]].end_line) for r in rows if r[0] in chunks]


def vector(mem, query: str, k: int) -> list[Hit]:
    import numpy as np

    idx = mem.index()
    ids, matrix = mem.vector_set(idx, mem.embedder.model_id)
    cos = matrix @ np.asarray(mem.encode_query(query), dtype=np.float32)
    top = [int(ids[i]) for i in np.argsort(-cos, kind="stable")[:k]]
    chunks = idx.chunk_rows(top)
    return [(chunks[i].path, chunks[i].start_line, chunks[i].end_line) for i in top]


def methods() -> dict[str, Method]:
    from kit.memory.search import SearchSettings

    fields = SearchSettings.__dataclass_fields__
    off = {name: 0.0 for name in ("recency_weight", "recency_query_weight") if name in fields}
    if not off:  # the search before issue 13: recency was the decay multiplier
        off = {"half_life_days": 0.0}
    return {
        "kit": _kit({}),
        "kit, no recency": _kit(off),
        "kit before": _legacy({}),
        "kit before, no decay": _legacy({"half_life_days": 0.0}),
        "bm25": bm25,
        "vector": vector,
    }


# --------------------------------------------------------------------------- scoring


def found(hits: list[Hit], group) -> int | None:
    """Rank (0-based) of the first hit holding a line of `group`, or None."""
    for rank, (path, start, end) in enumerate(hits):
        if any(line.path == path and start <= line.line <= end for line in group):
            return rank
    return None


@dataclasses.dataclass
class Score:
    at5: float
    at10: float
    latest: bool | None  # changed facts: the newest value ranks above every stale one (top 10)


def score(q: AskedQuestion, top5: list[Hit], top10: list[Hit]) -> Score:
    r5 = sum(found(top5, g) is not None for g in q.needs) / len(q.needs)
    r10 = sum(found(top10, g) is not None for g in q.needs) / len(q.needs)
    latest = None
    if q.stale:
        new = found(top10, q.needs[0])
        old = found(top10, q.stale)
        latest = new is not None and (old is None or new < old)
    return Score(r5, r10, latest)


def evaluate(mems: dict, built: dict, method: Method) -> dict[str, dict]:
    """{variant: {kind: (recall@5, recall@10, n), "all": …, "latest": share, "ms": median}}"""
    out: dict[str, dict] = {}
    for variant, _ in VARIANTS:
        scores: dict[str, list[Score]] = {k: [] for k in (*KINDS, *EXTRA)}
        times = []
        for persona in PERSONAS:
            mem, b = mems[variant, persona.name], built[variant, persona.name]
            for q in b.questions:
                method(mem, q.text, 5)  # warm: the query vectors are cached, so this times the search
                started = time.perf_counter()
                top5 = method(mem, q.text, 5)
                times.append((time.perf_counter() - started) * 1000)
                top10 = method(mem, q.text, 10)
                scores[q.kind].append(score(q, top5, top10))
        row: dict = {}
        for kind, items in scores.items():
            row[kind] = (statistics.mean(s.at5 for s in items), statistics.mean(s.at10 for s in items), len(items))
        every = [s for kind in KINDS for s in scores[kind]]
        row["all"] = (statistics.mean(s.at5 for s in every), statistics.mean(s.at10 for s in every), len(every))
        latest = [s.latest for s in every if s.latest is not None]
        row["latest"] = sum(latest) / len(latest)
        row["ms"] = statistics.median(times)
        out[variant] = row
    return out


def misses(mems: dict, built: dict, method: Method, variant: str = "base") -> list[str]:
    lines = []
    for persona in PERSONAS:
        mem, b = mems[variant, persona.name], built[variant, persona.name]
        for q in b.questions:
            top5 = method(mem, q.text, 5)
            s = score(q, top5, method(mem, q.text, 10))
            if s.at5 < 1 or s.latest is False:
                want = "; ".join("|".join(f"{ln.path[7:17]}:{ln.line}" for ln in g) for g in q.needs)
                got = ", ".join(f"{p[7:17]}:{a}" for p, a, _ in top5)
                lines.append(f"  [{q.kind}] {q.text}  want {want}  got {got}  (@5 {s.at5:.2f}, latest {s.latest})")
    return lines


# --------------------------------------------------------------------------- corpus


def prepare(workdir: Path, embedding: dict | None = None) -> tuple[dict, dict, dict]:
    from kit.memory.embeddings import load_embedder
    from kit.memory.service import Memory
    from kit.workspace import Workspace

    embedder = load_embedder(embedding or None)
    if embedder is None:
        raise SystemExit("recall bench: no embedding backend (install kit-agent[embeddings]); skipped")
    built: dict = {}
    mems: dict = {}
    info: dict = {"chunks": {}, "index_s": {}}
    base_db: Path | None = None
    for variant, years in VARIANTS:
        for persona in PERSONAS:
            root = workdir / variant / persona.name
            if root.exists():
                kept = root / ".kit" / "index.db"
                tmp = workdir / "keep.db"
                if kept.exists():
                    shutil.copy(kept, tmp)
                shutil.rmtree(root)
            else:
                tmp = None
            b = build(persona, root, shift_years=years)
            kit_dir = root / ".kit"
            kit_dir.mkdir(exist_ok=True)
            if tmp is not None and tmp.exists():
                shutil.move(tmp, kit_dir / "index.db")  # its embedding cache saves re-embedding
            elif variant != "base" and (workdir / "base" / persona.name / ".kit" / "index.db").exists():
                base_db = workdir / "base" / persona.name / ".kit" / "index.db"
                shutil.copy(base_db, kit_dir / "index.db")
            mem = Memory(Workspace.open(root), embedder=embedder)
            started = time.perf_counter()
            result = mem.sync()
            info["index_s"][variant, persona.name] = time.perf_counter() - started
            info["chunks"][variant, persona.name] = mem.index().counts()["chunks"]
            if result.errors:
                raise SystemExit(f"recall bench: index errors: {result.errors}")
            built[variant, persona.name], mems[variant, persona.name] = b, mem
    return built, mems, info


# --------------------------------------------------------------------------- the sweep


def sweep_grid() -> list[tuple[str, dict]]:
    from kit.memory.search import SearchSettings

    fields = SearchSettings.__dataclass_fields__
    grid: list[tuple[str, dict]] = [("defaults", {})]
    options = {
        "same_topic": (0.4, 0.5, 0.6, 0.7, 0.8, -1.0),
        "second_hop": (0.0, 0.6, 0.8, 1.0),
        "min_score": (0.0, 0.5, 0.6, 0.8),  # a share of the query's best relevance
        "min_vector_score": (0.0, 0.2, 0.4),  # the best cosine below which only keyword hits are kept
        "recency_weight": (0.0, 0.05, 0.1, 0.2),
        "recency_query_weight": (0.1, 0.2, 0.35, 0.5),
        "half_life_days": (14.0, 30.0, 90.0, 180.0),
        "min_relative": (0.0, 0.3, 0.5),
        "outside_period": (0.0, 0.25, 0.5, 0.75, 1.0),
        "mmr_lambda": (0.5, 0.7, 0.85, 1.0),
        "text_weight": (0.2, 0.3, 0.45),
        "candidates": (24, 40, 60, 100),
    }
    for name, values in options.items():
        if name in fields:
            grid += [(f"{name}={v}", {name: v}) for v in values]
    return grid


def print_sweep(mems: dict, built: dict, only: list[str] | None = None) -> None:
    print("\nsweep: one setting changed at a time from the defaults (recall@5 per kind; latest-first)")
    print(f"{'setting':28} {'corpus':8} " + " ".join(f"{k:>9}" for k in (*KINDS, "all", *EXTRA)) + f" {'latest':>7}")
    for label, changes in sweep_grid():
        if only and label != "defaults" and not any(label.startswith(o) for o in only):
            continue
        res = evaluate(mems, built, _kit(changes))
        for variant, _ in VARIANTS:
            row = res[variant]
            print(f"{label:28} {variant:8} " + " ".join(f"{row[k][0]:9.3f}" for k in (*KINDS, "all", *EXTRA))
                  + f" {row['latest']:7.2f}")


# --------------------------------------------------------------------------- main


def print_table(results: dict[str, dict], counts: dict[str, int]) -> None:
    head = " ".join(f"{k:>11}" for k in (*KINDS, "all", *EXTRA))
    print("\nrecall@5 / recall@10 by question type; latest = newest value above every stale one (changed facts)")
    print("questions: " + ", ".join(f"{k} {counts[k]}" for k in (*KINDS, *EXTRA)) + "; all = the first four")
    print(f"{'corpus':9} {'method':22} {head} {'latest':>7} {'search':>8}")
    for variant, _ in VARIANTS:
        label = {"base": "base", "shifted": "+1 year"}[variant]
        for name, res in results.items():
            row = res[variant]
            cells = " ".join(f"{row[k][0]:5.2f}/{row[k][1]:4.2f}" for k in (*KINDS, "all", *EXTRA))
            print(f"{label:9} {name:22} {cells} {row['latest']:7.2f} {row['ms']:6.1f}ms")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workdir", type=Path, help="keep the generated workspaces here (reruns reuse the index)")
    parser.add_argument("--sweep", nargs="*", metavar="SETTING", help="also print the settings sweep (all, or these)")
    parser.add_argument("--misses", action="store_true", help="list the questions Kit misses at 5")
    parser.add_argument("--only-kit", action="store_true", help="the table for Kit's defaults only")
    parser.add_argument("--quantize", choices=("none", "int8"), default="none",
                        help="embed with the fp32 model (none) or its int8 copy (onnx backend)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    embedding = {"backend": "onnx", "quantize": "int8"} if args.quantize == "int8" else None

    tmp = None
    workdir = args.workdir
    if workdir is None:
        tmp = tempfile.TemporaryDirectory()
        workdir = Path(tmp.name)
        home = workdir / "home"
        os.environ.update(HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"))
    workdir.mkdir(parents=True, exist_ok=True)
    try:
        started = time.perf_counter()
        built, mems, info = prepare(workdir, embedding)
        n_questions = {k: sum(1 for b in built.values() if b for q in b.questions if q.kind == k) // len(VARIANTS)
                       for k in (*KINDS, *EXTRA)}
        print(f"recall bench: {len(PERSONAS)} personas, "
              + ", ".join(f"{p.name} {built['base', p.name].notes} notes/{info['chunks']['base', p.name]} chunks"
                          for p in PERSONAS)
              + f"; {sum(n_questions.values())} questions; asked on {TODAY}; "
              f"embedder {next(iter(mems.values())).embedder.model_id}; "
              f"prepared in {time.perf_counter() - started:.1f} s")
        results = {name: evaluate(mems, built, method) for name, method in methods().items()
                   if not args.only_kit or name == "kit"}
        print_table(results, n_questions)
        if args.misses:
            for variant, _ in VARIANTS:
                print(f"\nKit misses ({variant}):")
                print("\n".join(misses(mems, built, methods()["kit"], variant)) or "  none")
        if args.sweep is not None:
            print_sweep(mems, built, args.sweep)
        if args.json:
            print(json.dumps({name: {v: {k: (list(x) if isinstance(x, tuple) else x) for k, x in row.items()}
                                     for v, row in res.items()} for name, res in results.items()}, indent=1))
        for mem in mems.values():
            mem.close()
    finally:
        if tmp is not None:
            tmp.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
