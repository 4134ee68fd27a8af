"""Hybrid search on a crafted corpus with a frozen clock (KIT_NOW = 2026-05-07)."""

from __future__ import annotations

import json
import math
from datetime import date

import numpy as np
import pytest

from helpers_memory import undated_filler, write
from kit.memory.search import (
    SearchSettings,
    bm25_to_score,
    combine,
    hybrid_search,
    jaccard,
    mmr,
    normalise,
    normalised_weights,
    period_factor,
    recency,
    recency_prior,
    text_candidates,
    tokens,
)

NOW = "2026-05-07T09:00:00+00:00"
TODAY = date(2026, 5, 7)
GARAGE = "- The garage door code is 4512\n"


@pytest.fixture(scope="module")
def corpus(tmp_path_factory, real_embedder):
    from kit.init import init_workspace
    from kit.memory.service import Memory
    from kit.workspace import Workspace

    root = tmp_path_factory.mktemp("search") / "ws"
    init_workspace(root)
    undated_filler(root, 24)
    write(root, "memory/2026-05-01.md", "# 2026-05-01\n\n- Dana moved to Lisbon in March\n")
    write(root, "memory/2026-05-02.md", "# 2026-05-02\n\n- Filed the refund request as ticket QZX-9931 with the airline\n")
    write(root, "memory/2026-05-05.md", "# 2026-05-05\n\n- 用户喜欢喝咖啡，不加糖\n")
    # three equal texts: yesterday, 60 days ago, and the evergreen MEMORY.md
    write(root, "memory/2026-05-06.md", GARAGE)
    write(root, "memory/2026-03-08.md", GARAGE)
    write(root, "MEMORY.md", GARAGE)
    write(root, "memory/topics/alice-1.md", "- Alice's birthday is on March 3rd and she loves orchids\n")
    write(root, "memory/topics/alice-2.md", "- Alice's birthday is on March 3rd, and she loves orchids!\n")
    write(root, "memory/topics/alice-3.md", "- Alice's favourite flowers are orchids\n")
    ws = Workspace.open(root)
    mem = Memory(ws, embedder=real_embedder)
    mem.sync()
    yield mem
    mem.close()


@pytest.fixture(autouse=True)
def _frozen_clock(kit_now):
    kit_now(NOW)


def run(mem, query: str, settings: SearchSettings | None = None, limit: int | None = None):
    idx = mem.index()
    return hybrid_search(
        idx, query, settings or SearchSettings(), today=TODAY, limit=limit,
        vectors=mem.vector_set(idx, mem.embedder.model_id), encode_query=mem.encode_query,
    )


# --------------------------------------------------------------------------- formulas


def test_formulas_read_like_the_spec():
    assert bm25_to_score(-3.0) == 0.75
    assert bm25_to_score(3.0) == 0.75
    assert bm25_to_score(0.0) == 0.0
    assert normalised_weights(7, 3) == (0.7, 0.3)
    # weights whose sum overflows to inf (each is a valid float): shares, not (0, 0)
    assert normalised_weights(1.5e308, 1.5e308) == (0.5, 0.5)
    assert normalised_weights(1.2e308, 0.6e308) == pytest.approx((2 / 3, 1 / 3))
    assert normalised_weights(math.inf, 1.0) == (1.0, 0.0)  # review: it recursed without end
    assert combine(0.8, 0.5, 0.7, 0.3) == pytest.approx(0.71)
    assert combine(0.8, 0.5, 7, 3) == pytest.approx(0.71)  # weights are normalised
    assert recency(30, 30) == pytest.approx(0.5)
    assert recency(60, 30) == pytest.approx(0.25)
    assert recency(None, 30) == 1.0  # evergreen
    assert recency(10, 0) == 1.0  # half-life 0 turns recency off
    assert recency_prior(30, 30, 0.1) == pytest.approx(0.95)  # 1 − w + w·p
    assert recency_prior(10_000, 30, 0.1) == pytest.approx(0.9)  # never below the floor 1 − w
    assert recency_prior(10_000, 30, 0.0) == 1.0  # weight 0: recency off
    from kit.memory.dates import Period
    march = Period(date(2026, 3, 1), date(2026, 3, 31))
    assert period_factor(date(2026, 3, 9), march, 0.5) == 1.0
    assert period_factor(date(2026, 4, 9), march, 0.5) == 0.5
    assert period_factor(None, march, 0.5) == 0.5  # undated text is not "in March"
    assert period_factor(date(2026, 4, 9), None, 0.5) == 1.0  # no period named: nothing narrows
    assert normalise([0.02, 0.01, 0.0]) == [1.0, 0.5, 0.0]
    assert normalise([0.0, 0.0]) == [0.0, 0.0]
    assert jaccard(frozenset("ab"), frozenset("bc")) == pytest.approx(1 / 3)
    assert tokens("Alice's API/v2 用户喜欢") == {"alice", "s", "api", "v2", "用户", "户喜", "喜欢"}


def test_mmr_prefers_a_different_result_over_a_near_duplicate():
    a, a2, b = frozenset({"x", "y", "z"}), frozenset({"x", "y", "z"}), frozenset({"x", "q", "r"})
    assert mmr([0.9, 0.88, 0.8], [a, a2, b], 0.7, 2) == [0, 2]
    assert mmr([0.9, 0.88, 0.8], [a, a2, b], 1.0, 2) == [0, 1]  # λ = 1 is plain ranking


# --------------------------------------------------------------------------- the two sides


def test_a_paraphrase_with_no_shared_keyword_is_found_by_the_vector_side(corpus):
    query = "Portugal relocation"
    note = "- Dana moved to Lisbon in March"
    assert not (tokens(query) & tokens(note))
    result = run(corpus, query)
    top = result.results[0]
    assert (top.path, top.start_line, top.end_line) == ("memory/2026-05-01.md", 3, 3)
    assert top.text_score == 0.0
    assert top.vector_score >= 0.35
    assert result.mode == "hybrid"


def test_an_exact_rare_token_is_found_by_the_text_side(corpus):
    result = run(corpus, "QZX-9931")
    top = result.results[0]
    assert top.path == "memory/2026-05-02.md"
    assert top.text_score > 0.5
    assert text_candidates(corpus.index(), "QZX-9931", 24).keys() == {
        r[0] for r in corpus.index().conn.execute("SELECT id FROM chunks WHERE path = 'memory/2026-05-02.md'")
    }


def test_bm25_mapping_and_weights_give_the_documented_scores(corpus):
    idx = corpus.index()
    ranks = dict(idx.conn.execute(
        "SELECT c.path, bm25(chunks_fts) FROM chunks_fts JOIN chunks c ON c.id = chunks_fts.rowid "
        "WHERE chunks_fts MATCH '\"garage\" OR \"door\" OR \"code\"'"
    ).fetchall())
    assert set(ranks) == {"MEMORY.md", "memory/2026-05-06.md", "memory/2026-03-08.md"}
    result = run(corpus, "garage door code")
    by_path = {h.path: h for h in result.results}
    for path, rank in ranks.items():
        hit = by_path[path]
        assert abs(rank) / (1 + abs(rank)) < 1  # bm25 alone; each of them holds every word: cover 1
        assert hit.text_score == 1.0
        assert hit.relevance == pytest.approx(0.7 * hit.vector_score + 0.3 * hit.text_score)
        # age from the newest candidate (2026-05-06): 0 for it, 59 days for 2026-03-08; MEMORY.md evergreen
        age = {"MEMORY.md": None, "memory/2026-05-06.md": 0, "memory/2026-03-08.md": 59}[path]
        assert hit.score == pytest.approx(hit.relevance * recency_prior(age, 30, 0.1))
        assert hit.relative == pytest.approx(hit.score / result.results[0].score)
    assert [h.rank for h in result.results] == list(range(1, len(result.results) + 1))


def test_text_score_is_bm25_or_the_idf_weighted_share_of_the_words_held(corpus):
    """text score = max(|r|/(1+|r|), Σ idf(held) / Σ idf(asked)), idf = ln(1 + (N − n + 0.5)/(n + 0.5))."""
    idx = corpus.index()
    n = idx.conn.execute("SELECT COUNT(*) FROM chunks").fetchone()[0]

    def holders(word):
        return {r[0] for r in idx.conn.execute("SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH ?", (word,))}

    garage, lantern = holders("garage"), holders("lantern")
    assert garage and lantern and not garage & lantern
    w = {word: math.log(1 + (n - len(ids) + 0.5) / (len(ids) + 0.5)) for word, ids in
         (("garage", garage), ("lantern", lantern))}
    ranks = dict(idx.conn.execute("SELECT rowid, bm25(chunks_fts) FROM chunks_fts WHERE chunks_fts MATCH "
                                  "'\"garage\" OR \"lantern\"'").fetchall())
    scores = text_candidates(idx, "garage lantern", 50)
    assert scores.keys() == ranks.keys()
    for chunk_id, rank in ranks.items():
        cover = w["garage" if chunk_id in garage else "lantern"] / (w["garage"] + w["lantern"])
        assert scores[chunk_id] == pytest.approx(max(abs(rank) / (1 + abs(rank)), cover))
    assert list(scores.values()) == sorted(scores.values(), reverse=True)


def test_equal_notes_rank_by_age_and_memory_md_is_evergreen(corpus):
    result = run(corpus, "garage door code")
    order = [h.path for h in result.results[:3]]
    assert order == ["MEMORY.md", "memory/2026-05-06.md", "memory/2026-03-08.md"]
    evergreen, newest, older = result.results[:3]
    assert evergreen.vector_score == pytest.approx(newest.vector_score) == pytest.approx(older.vector_score)
    base = 0.7 * evergreen.vector_score + 0.3 * evergreen.text_score
    assert evergreen.score == pytest.approx(base)
    assert newest.score == pytest.approx(base)  # the newest note is "now" for recency
    # 59 days older: 0.9 + 0.1·2^(−59/30) of its relevance, a tie-break and no more
    assert older.score == pytest.approx(base * (0.9 + 0.1 * 2 ** (-59 / 30)))
    assert (evergreen.date, newest.date, older.date) == (None, "2026-05-06", "2026-03-08")


def test_mmr_drops_a_near_duplicate_from_the_top_results(corpus):
    query = "Alice birthday orchids"
    plain = run(corpus, query, SearchSettings(mmr_lambda=1.0), limit=2)
    assert {h.path for h in plain.results} == {"memory/topics/alice-1.md", "memory/topics/alice-2.md"}
    diverse = run(corpus, query, limit=2)
    paths = [h.path for h in diverse.results]
    assert paths[0] == plain.results[0].path
    assert paths[1] == "memory/topics/alice-3.md"


def test_a_chinese_query_finds_the_chinese_note(corpus):
    result = run(corpus, "喜欢喝咖啡")
    top = result.results[0]
    assert (top.path, top.start_line) == ("memory/2026-05-05.md", 3)
    assert top.text_score > 0
    assert top.snippet == "- 用户喜欢喝咖啡，不加糖"
    short = run(corpus, "咖啡")  # two characters: below the trigram size, found by substring
    assert short.results[0].path == "memory/2026-05-05.md"
    assert short.results[0].text_score == 0.5


def test_or_ranks_chunks_holding_every_word_first(corpus):
    idx = corpus.index()
    both = text_candidates(idx, "garage door", 50)
    rows = idx.chunk_rows(both)
    first_three = [rows[i].path for i in list(both)[:3]]
    assert sorted(first_three) == ["MEMORY.md", "memory/2026-03-08.md", "memory/2026-05-06.md"]
    mixed = text_candidates(idx, "garage lantern", 50)  # no chunk holds both words: either one
    paths = {r.path for r in idx.chunk_rows(mixed).values()}
    assert {"MEMORY.md", "memory/2026-05-06.md"} <= paths
    assert any(p.startswith("memory/topics/filler-") for p in paths)
    # a question's stop words are no search terms: "what is the" would match nearly every chunk
    assert text_candidates(idx, "what is the garage door code", 50).keys() == text_candidates(
        idx, "garage door code", 50).keys()


def test_keyword_fallback_keeps_an_exact_match_under_min_score(corpus):
    strict = SearchSettings(min_score=0.95, min_vector_score=0.99)
    result = run(corpus, "QZX-9931", strict)
    assert [h.path for h in result.results] == ["memory/2026-05-02.md"]
    hit = result.results[0]
    assert hit.score < strict.min_score and hit.vector_score < strict.min_vector_score
    assert hit.score >= min(strict.min_score, strict.text_weight)
    # a query with no keyword hit keeps nothing under the same settings
    assert run(corpus, "Portugal relocation", strict).results == ()


def test_snippets_are_cut_to_snippet_chars(corpus):
    result = run(corpus, "QZX-9931", SearchSettings(snippet_chars=20))
    assert result.results[0].snippet == "- Filed the refund r"


def test_cli_search_json_is_one_document_in_the_spec_shape(corpus, cli):
    out = cli("memory", "search", "garage door code", "--json", "--limit", "2", "-w", corpus.ws.root)
    assert out.exit_code == 0, out.output
    doc = json.loads(out.output)
    assert set(doc) == {"query", "mode", "period", "recent", "results"}
    assert doc["query"] == "garage door code" and doc["mode"] == "hybrid"
    assert doc["period"] is None and doc["recent"] is False
    assert len(doc["results"]) == 2
    assert set(doc["results"][0]) == {"path", "start_line", "end_line", "rank", "score", "relative", "relevance",
                                      "vector_score", "text_score", "date", "times", "snippet", "context"}
    first, second = doc["results"]
    assert (first["path"], first["rank"], first["relative"], first["date"]) == ("MEMORY.md", 1, 1.0, None)
    assert (second["path"], second["rank"], second["date"]) == ("memory/2026-05-06.md", 2, "2026-05-06")


def test_cli_search_text_output_prints_line_or_range_not_line_column(corpus, cli):
    one = cli("memory", "search", "garage door code", "--limit", "1", "-w", corpus.ws.root)
    assert one.exit_code == 0, one.output
    assert one.output.splitlines()[0].startswith("MEMORY.md:1  score ")
    many = cli("memory", "search", "kettle kitchen", "--limit", "1", "-w", corpus.ws.root)
    first = many.output.splitlines()[0]
    assert first.startswith("memory/topics/filler-") and ".md:1-5  score " in first, first
    doc = json.loads(cli("memory", "search", "kettle kitchen", "--limit", "1", "--json", "-w", corpus.ws.root).output)
    assert (doc["results"][0]["start_line"], doc["results"][0]["end_line"]) == (1, 5)


def test_cli_search_refuses_an_empty_query_as_usage(corpus, cli):
    out = cli("memory", "search", "  ", "--json", "-w", corpus.ws.root)
    assert out.exit_code == 2 and out.stdout == ""
    assert "QUERY is empty" in out.stderr


def test_mmr_drops_a_near_duplicate_piece_of_the_same_lines_only():
    a, a2, b = frozenset({"x", "y", "z"}), frozenset({"x", "y", "z"}), frozenset({"x", "q", "r"})
    assert mmr([0.9, 0.88, 0.8], [a, a2, b], 0.7, 3, groups=["k", "k", "k"]) == [0, 2]
    assert mmr([0.9, 0.88, 0.8], [a, a2, b], 0.7, 3, groups=["k", "other", "k"]) == [0, 2, 1]
    assert mmr([0.9, 0.88, 0.8], [a, a2, b], 1.0, 3, groups=["k", "k", "k"]) == [0, 1, 2]


def test_a_long_repetitive_line_is_found_by_its_opening_words_and_shows_once(tmp_path, real_embedder, kit_now):
    from kit.init import init_workspace
    from kit.memory.service import Memory
    from kit.workspace import Workspace

    root = tmp_path / "ws"
    init_workspace(root)
    sentence = "The backup job copies the staging database to cold storage every night and checks the restore. "
    long_line = "Long line fact: the staging cluster rotates certificates every ninety days. " + sentence * 220
    assert len(long_line) == 20_976
    write(root, "memory/2026-05-06.md", "# 2026-05-06\n\n- " + long_line + "\n- Ada prefers Tuesday deploys\n")
    mem = Memory(Workspace.open(root), embedder=real_embedder)
    try:
        mem.sync()
        opening = run(mem, "Long line fact")
        assert [(h.path, h.start_line) for h in opening.results] == [("memory/2026-05-06.md", 3)]
        assert opening.results[0].snippet.startswith("- Long line fact: the staging cluster")
        backups = run(mem, "backup job copies the staging database")
        # 13 pieces of line 3: the opening one differs (its first sentence), the other 12 are copies
        assert [(h.path, h.start_line, h.end_line) for h in backups.results] == [("memory/2026-05-06.md", 3, 3)] * 2
        assert sorted(h.snippet.startswith("- Long line fact") for h in backups.results) == [False, True]
    finally:
        mem.close()


def _plain_mmr(scores, sets, lam, limit, groups=None):
    """MMR as its docstring defines it, every candidate rescored each round (the reference)."""
    from kit.memory.search import NEAR_DUPLICATE, jaccard

    remaining, penalty, picked = list(range(len(scores))), [0.0] * len(scores), []
    while remaining and len(picked) < limit:
        best = max(remaining, key=lambda i: (lam * scores[i] - (1 - lam) * penalty[i], -i))
        picked.append(best)
        remaining.remove(best)
        keep = []
        for i in remaining:
            similarity = jaccard(sets[i], sets[best])
            penalty[i] = max(penalty[i], similarity)
            if not (groups is not None and lam < 1 and groups[i] == groups[best] and similarity >= NEAR_DUPLICATE):
                keep.append(i)
        remaining = keep
    return picked


def test_lazy_mmr_picks_exactly_what_rescoring_every_candidate_picks():
    import random

    rng = random.Random(13)
    for _ in range(3000):
        n = rng.randint(0, 20)
        vocab = [f"w{k}" for k in range(rng.randint(2, 10))]
        sets = [frozenset(rng.sample(vocab, rng.randint(0, len(vocab)))) for _ in range(n)]  # empty ones too
        scores = [rng.choice([rng.random(), 1.0, 0.5, 0.0]) for _ in range(n)]  # ties included
        lam = rng.choice([0.0, 0.3, 0.7, 1.0])
        groups = [rng.choice("ab") for _ in range(n)] if rng.random() < 0.5 else None
        limit = rng.randint(1, 25)
        assert mmr(scores, sets, lam, limit, groups) == _plain_mmr(scores, sets, lam, limit, groups)


def test_holds_is_isin_for_ascending_ids():
    """The keyword cover's membership test (binary search over a word's ascending rows) answers
    what np.isin answers, duplicates and misses included."""
    import random

    from kit.memory.search import _holds

    rng = random.Random(3)
    for _ in range(2000):
        ids = np.sort(np.array([rng.randint(0, 30) for _ in range(rng.randint(0, 12))], dtype=np.int64))
        wanted = np.array([rng.randint(-2, 33) for _ in range(rng.randint(0, 12))], dtype=np.int64)
        assert _holds(ids, wanted).tolist() == np.isin(wanted, ids).tolist()


def test_cosines_looked_up_together_are_those_looked_up_one_by_one():
    import random

    from kit.memory.search import Vectors

    rng = random.Random(8)
    for _ in range(500):
        ids = np.array(sorted(rng.sample(range(40), rng.randint(0, 15))), dtype=np.int64)
        vectors = Vectors(ids, np.array([rng.random() for _ in ids], dtype=np.float32))
        asked = [rng.randint(-1, 41) for _ in range(rng.randint(0, 10))]
        one_by_one = {i: vectors.of(i) for i in asked if vectors.of(i) is not None}
        assert vectors.of_many(asked) == one_by_one
        assert list(vectors.of_many(asked)) == list(one_by_one)  # in the order asked


def test_ascii_tokens_are_those_of_the_general_path():
    """tokens() takes ASCII text without NFKC: the same lower-cased words as the general path."""
    import random
    import unicodedata

    from kit.memory.search import _WORD

    assert tokens("Alice LIKES Oat-Milk") == frozenset({"alice", "likes", "oat", "milk"})
    rng = random.Random(4)
    for _ in range(2000):
        text = "".join(rng.choice("aZq Q_-9.\tx'Y") for _ in range(rng.randint(0, 20)))
        assert tokens(text) == frozenset(_WORD.findall(unicodedata.normalize("NFKC", text).lower()))


def test_a_long_chunk_shows_the_lines_that_hold_the_match(tmp_path, real_embedder):
    """Regression (new-user pass): a hit in a long table showed its first 700 characters, thirteen
    rows that did not hold the match; the model got that text and the recall log logged it."""
    from kit.init import init_workspace
    from kit.memory.service import Memory
    from kit.workspace import Workspace

    root = tmp_path / "ws"
    init_workspace(root)
    rows = ["| host | ip |", "|---|---|"] + [f"| srv-{i} | 10.0.0.{i % 250} |" for i in range(60)]
    rows.insert(40, "| Zanzibar quokka | 9.9.9.9 |")
    write(root, "memory/2026-05-01.md", "# 2026-05-01\n\n" + "\n".join(rows) + "\n")
    mem = Memory(Workspace.open(root), embedder=real_embedder)
    mem.sync()
    try:
        hit = run(mem, "Zanzibar quokka", SearchSettings(snippet_chars=120)).results[0]
        lines = (root / "memory/2026-05-01.md").read_text().split("\n")
        assert "| Zanzibar quokka | 9.9.9.9 |" in hit.snippet.split("\n")
        # whole lines, and the hit's lines are the ones shown (memory_get of them gives the snippet)
        assert hit.snippet == "\n".join(lines[hit.start_line - 1 : hit.end_line])
        assert hit.snippet == ("| srv-37 | 10.0.0.37 |\n| Zanzibar quokka | 9.9.9.9 |\n| srv-38 | 10.0.0.38 |\n"
                               "| srv-39 | 10.0.0.39 |")  # as many as fit in 120 characters
        # no line holds a query word (a meaning-only hit): the chunk's start, as before
        assert run(mem, "network addresses of machines", SearchSettings(snippet_chars=120, min_score=0,
                                                                         min_vector_score=0)).results[0].snippet \
            .startswith("| host | ip |")
    finally:
        mem.close()


def test_a_query_of_symbols_finds_the_lines_holding_them(tmp_path, real_embedder):
    """Regression (new-user pass): `kit memory search "☀️"` gave an unrelated line (text score 0):
    a query of no word had no text side at all."""
    from kit.init import init_workspace
    from kit.memory.service import Memory
    from kit.workspace import Workspace

    root = tmp_path / "ws"
    init_workspace(root)
    write(root, "memory/2026-05-02.md", "# 2026-05-02\n\n- Beach day ☀️ with Ana\n- Rainy Tuesday, stayed in\n"
                                         "- Deploy → staging first\n")
    mem = Memory(Workspace.open(root), embedder=real_embedder)
    mem.sync()
    try:
        for query, line in (("☀️", "- Beach day ☀️ with Ana"), ("→", "- Deploy → staging first")):
            hits = run(mem, query).results
            assert hits and hits[0].snippet == line and hits[0].text_score == 0.5, query
    finally:
        mem.close()


def test_shown_part_folds_as_the_query_does_and_keeps_a_row_whose_lines_it_cannot_map():
    from kit.memory.index import ChunkRow
    from kit.memory.search import query_terms, shown_part

    lines = [f"| row {i} | filler text here |" for i in range(40)] + ["| Straße 5 | Ärzte |"]
    row = ChunkRow(1, "memory/2026-05-01.md", 10, 50, "", "\n".join(lines))
    terms = [t for part in query_terms("Straße") for t in part]
    shown, first, last = shown_part(row, terms, 80)
    assert (shown.split("\n")[-1], last) == ("| Straße 5 | Ärzte |", 50)  # NFKC + lower, as the query's terms
    # full-width letters and a ligature fold only under NFKC ("Straße".lower() needed none)
    wide = ChunkRow(3, "memory/2026-05-01.md", 10, 50, "", "\n".join(lines[:40] + ["| Ｓｔｒａｓｓｅ 5 | ﬁle |"]))
    wide_terms = [t for part in query_terms("strasse file") for t in part]
    assert shown_part(wide, wide_terms, 80)[0].split("\n")[-1] == "| Ｓｔｒａｓｓｅ 5 | ﬁle |"
    # a row whose text does not span its lines one to one (the range says 10-60): its start, unmapped
    odd = ChunkRow(2, "memory/2026-05-01.md", 10, 60, "", "\n".join(lines))
    assert shown_part(odd, terms, 80) == ("\n".join(lines)[:80], 10, 60)


def test_a_query_of_ascii_punctuation_is_not_a_substring_scan(tmp_path, real_embedder):
    """Review: "-" matched every bullet (text 0.5 each), "?" every question."""
    from kit.init import init_workspace
    from kit.memory.service import Memory
    from kit.workspace import Workspace

    root = tmp_path / "ws"
    init_workspace(root)
    write(root, "memory/2026-05-02.md", "# 2026-05-02\n\n- one\n- two\n- three?\n")
    mem = Memory(Workspace.open(root), embedder=real_embedder)
    mem.sync()
    try:
        for query in ("-", "?", "|"):
            assert all(h.text_score in (None, 0.0) for h in run(mem, query).results), query
    finally:
        mem.close()
