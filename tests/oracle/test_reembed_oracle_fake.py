"""``oramem reembed`` on an Oracle store (oramem.oracle_reembed), over the recording fake and
the stand-in of the package's reembed calls (reembed_standin.py): the statement sequence,
resume after a failure mid-batch, a dimension change (and a crash inside its DDL), a forget
between batches (Bob-vs-Alice: Alice's text and vectors never come back), the refusal of
another embedder without restart, the re-chunk pass, and the CLI. Static-checked, not run
against Oracle."""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner

from oramem.embedders import HashEmbedder
from oramem.embedders.base import InputWindow
from oramem.embedders.identity import identity_of
from oramem.errors import StoreError
from oramem.oracle_reembed import reembed_store

from .fakes import Recorder
from .reembed_standin import ReembedStandIn, TxConnection

OLD_DIM = 8


class Hooked(HashEmbedder):
    """HashEmbedder(dim, seed=3) that calls ``hook(n)`` before its n-th embed call (1-based)."""

    def __init__(self, dim: int, hook) -> None:
        super().__init__(dim, seed=3)
        self.hook, self.calls = hook, 0

    def embed(self, texts, **kw):
        self.calls += 1
        self.hook(self.calls)
        return super().embed(texts, **kw)


def _store(n: int = 5, dim: int = OLD_DIM, users: tuple = ("bob",)) -> ReembedStandIn:
    old = HashEmbedder(dim)
    standin = ReembedStandIn(dim, identity_of(old))
    for i in range(n):
        user = users[i % len(users)]
        text = f"{user} note {i}"
        standin.add("memory", f"m{i}", text, [text], old.embed([text]).tolist(), user_id=user)
    return standin


def _connect(standin: ReembedStandIn) -> tuple[TxConnection, Recorder]:
    rec = Recorder()
    standin.install(rec.answers)
    return TxConnection(rec, standin), rec


def _steps(rec: Recorder) -> list[str]:
    """The statement sequence: PL/SQL calls by short name, commits and rollbacks."""
    out = []
    for c in rec.calls:
        if c.kind in ("callfunc", "callproc"):
            out.append(c.name.split(".")[1].replace("reembed_", "").replace("_json", ""))
        elif c.kind in ("commit", "rollback"):
            out.append(c.kind)
    return out


def _vectors_of(standin: ReembedStandIn, embedder) -> bool:
    chunks = standin.base["chunks"]
    want = embedder.embed([c["text"] for c in chunks.values()])
    return np.allclose(np.array([c["embedding"] for c in chunks.values()]), want, atol=1e-6)


def test_same_dimension_batches_then_one_swap_transaction():
    standin = _store(5)
    conn, rec = _connect(standin)
    new = HashEmbedder(OLD_DIM, seed=3)
    seen = []
    result = reembed_store(conn, new, memory_store_id="mystore", batch_size=2, progress=lambda d, t: seen.append((d, t)))
    assert (result.rows, result.resumed, result.total, result.vector_dim) == (5, 0, 5, OLD_DIM)
    assert result.previous == identity_of(HashEmbedder(OLD_DIM)) and result.embedder == identity_of(new)
    # one transaction per batch, its lock first; the swap: lock, the rows added meanwhile, swap, one commit
    steps = _steps(rec)
    assert steps[:steps.index("finish") + 1] == [
        "begin",
        "rows", "lock_retrieval_rows", "save", "commit",
        "rows", "lock_retrieval_rows", "save", "commit",
        "rows", "lock_retrieval_rows", "save", "commit",
        "rows",
        "lock_retrieval_rows", "rows", "swap", "commit",
        "finish",
    ]
    assert seen[0] == (0, 5) and seen[-1] == (5, 5)
    assert standin.base["store"]["embedder"] == identity_of(new) and standin.base["pending"] is None
    assert _vectors_of(standin, new)
    assert standin.ddl == ["ADD (embedding_new VECTOR(8, FLOAT32))", "SET UNUSED (embedding_new)"]


def test_the_store_answers_with_its_old_vectors_until_the_swap_commits():
    standin = _store(3)
    conn, rec = _connect(standin)
    old_vectors = [c["embedding"] for c in standin.base["chunks"].values()]
    committed_at_swap = {}

    def at_swap(call):
        committed_at_swap.update(vectors=[c["embedding"] for c in standin.base["chunks"].values()],
                                 embedder=standin.base["store"]["embedder"])
        return type(standin).swap(standin, call)

    rec.answers["oramem_admin.reembed_swap_json"] = at_swap
    reembed_store(conn, HashEmbedder(OLD_DIM, seed=3), memory_store_id="mystore", batch_size=2)
    assert committed_at_swap == {"vectors": old_vectors, "embedder": identity_of(HashEmbedder(OLD_DIM))}


def test_resume_after_a_failure_mid_batch():
    standin = _store(6)
    conn, rec = _connect(standin)
    new = HashEmbedder(OLD_DIM, seed=3)

    def fail_third(n):
        if n == 3:
            raise RuntimeError("embedding service down")

    with pytest.raises(RuntimeError, match="service down"):
        reembed_store(conn, Hooked(OLD_DIM, fail_third), memory_store_id="mystore", batch_size=2)
    assert standin.base["store"]["embedder"] == identity_of(HashEmbedder(OLD_DIM))  # not swapped
    assert sum(c["embedding_new"] is not None for c in standin.base["chunks"].values()) == 4
    result = reembed_store(conn, new, memory_store_id="mystore", batch_size=2)
    assert (result.resumed, result.rows, result.total) == (4, 2, 6)
    assert _vectors_of(standin, new) and standin.base["store"]["embedder"] == identity_of(new)


def test_a_failure_inside_the_swap_transaction_rolls_it_back_and_a_rerun_finishes():
    standin = _store(4)
    conn, rec = _connect(standin)
    new = HashEmbedder(OLD_DIM, seed=3)
    real_swap = rec.answers["oramem_admin.reembed_swap_json"]

    def late_row_then_fail(call):
        raise RuntimeError("connection lost")

    # a writer adds a record (old embedder) after the batches: the swap transaction embeds it
    orig_rows = rec.answers["oramem_admin.reembed_rows_json"]

    def rows(call):
        if call.binds["in_after"] is None and not any(k[1] == "late" for k in standin.db["chunks"]):
            if any(c["embedding_new"] is not None for c in standin.db["chunks"].values()):
                standin.add("memory", "late", "late note", ["late note"], HashEmbedder(OLD_DIM).embed(["late note"]).tolist())
        return orig_rows(call)

    rec.answers["oramem_admin.reembed_rows_json"] = rows
    rec.answers["oramem_admin.reembed_swap_json"] = late_row_then_fail
    with pytest.raises(RuntimeError, match="connection lost"):
        reembed_store(conn, new, memory_store_id="mystore", batch_size=2)
    assert _steps(rec)[-1] == "rollback"
    assert standin.base["chunks"][("memory", "late", 1)]["embedding_new"] is None  # the swap's save rolled back
    rec.answers["oramem_admin.reembed_swap_json"] = real_swap
    result = reembed_store(conn, new, memory_store_id="mystore", batch_size=2)
    assert result.total == 5 and _vectors_of(standin, new)


def test_dimension_change_swaps_the_column_by_ddl_and_records_the_dimension():
    standin = _store(3)
    conn, rec = _connect(standin)
    new = HashEmbedder(16, seed=3)
    result = reembed_store(conn, new, memory_store_id="mystore", batch_size=2)
    assert result.vector_dim == 16 and standin.base["store"]["vector_dim"] == 16
    assert standin.base["store"]["state"] == "READY" and standin.base["store"]["embedder"] == identity_of(new)
    assert standin.ddl == ["ADD (embedding_new VECTOR(16, FLOAT32))", "DROP INDEX OM_MYSTORE_HNSW", "SET UNUSED (embedding)",
                           "RENAME COLUMN embedding_new TO embedding", "CREATE VECTOR INDEX OM_MYSTORE_HNSW"]
    assert _vectors_of(standin, new)
    steps = _steps(rec)
    assert steps[steps.index("swap"):steps.index("finish") + 1] == ["swap", "commit", "finish"]
    # then the re-chunk pass reads the store through the store API (nothing to re-chunk here)
    assert steps[steps.index("finish") + 1:] == ["open_store", "export", "export"]


def test_a_crash_inside_the_dimension_swap_is_finished_by_a_rerun():
    standin = _store(3)
    conn, rec = _connect(standin)
    new = HashEmbedder(16, seed=3)
    standin.crash_after_ddl = 3  # the shadow column, the index drop, SET UNUSED; then the rename fails
    with pytest.raises(Exception, match="ORA-03113"):
        reembed_store(conn, new, memory_store_id="mystore", batch_size=2)
    assert standin.base["store"]["state"] == "UPGRADING" and standin.base["pending"] is not None
    with pytest.raises(Exception, match="swapping in the vectors"):  # another embedder cannot take over
        reembed_store(conn, HashEmbedder(32), memory_store_id="mystore", restart=True)
    before = len(rec.calls)
    result = reembed_store(conn, new, memory_store_id="mystore", batch_size=2)
    assert result.rows == 0 and result.resumed == 3 and result.vector_dim == 16
    tail = [c.name.split(".")[1] for c in rec.calls[before:] if c.kind == "callfunc"]
    assert tail[:2] == ["reembed_begin_json", "reembed_finish_json"]  # nothing left to embed
    assert standin.base["store"]["state"] == "READY" and standin.base["store"]["vector_dim"] == 16
    assert _vectors_of(standin, new)


def test_forget_between_batches_alice_never_comes_back():
    standin = _store(6, users=("alice", "bob"))
    conn, rec = _connect(standin)
    new = HashEmbedder(OLD_DIM, seed=3)

    def erase_alice_at_second_batch(n):
        if n == 2:
            standin.erase_user("alice")  # her forget commits while this batch (with her rows) is embedded

    result = reembed_store(conn, Hooked(OLD_DIM, erase_alice_at_second_batch), memory_store_id="mystore", batch_size=2)
    state = repr(standin.base)
    assert "alice" not in state
    alice_vectors = new.embed([f"alice note {i}" for i in (0, 2, 4)])
    for c in standin.base["chunks"].values():
        assert not any(np.allclose(c["embedding"], v, atol=1e-6) for v in alice_vectors)
    assert result.total == 3 and set(k[1] for k in standin.base["chunks"]) == {"m1", "m3", "m5"}
    assert _vectors_of(standin, new)


def test_another_embedder_pending_is_refused_without_restart():
    standin = _store(4)
    conn, rec = _connect(standin)
    def stop(n):
        raise RuntimeError("stopped")

    with pytest.raises(RuntimeError, match="stopped"):
        reembed_store(conn, Hooked(OLD_DIM, stop), memory_store_id="mystore", batch_size=2)
    before = len(rec.calls)
    with pytest.raises(StoreError, match="unfinished reembed to .*restart"):
        reembed_store(conn, HashEmbedder(16), memory_store_id="mystore")
    assert [c.name for c in rec.calls[before:] if c.kind == "callfunc"] == ["oramem_admin.reembed_begin_json"]
    assert standin.base["pending"]["vector_dim"] == OLD_DIM
    result = reembed_store(conn, HashEmbedder(16), memory_store_id="mystore", restart=True)
    assert result.vector_dim == 16 and result.resumed == 0 and _vectors_of(standin, HashEmbedder(16))


def test_bad_arguments_and_in_database_targets_are_refused_before_any_call():
    standin = _store(1)
    conn, rec = _connect(standin)
    with pytest.raises(ValueError, match="batch_size"):
        reembed_store(conn, HashEmbedder(8), batch_size=0)

    class InDatabase(HashEmbedder):
        embedder_identity = {"kind": "oracle-db", "model": "ALL_MINILM_L6_V2", "dimension": 8}

    with pytest.raises(ValueError, match="in-database model"):
        reembed_store(conn, InDatabase(8))
    # a caller's uncommitted work on the connection would be committed by the batches: refused
    standin.db["records"][("memory", "pending")] = {"content": "uncommitted", "user_id": None, "seq_no": 99}
    with pytest.raises(ValueError, match="transaction in progress"):
        reembed_store(conn, HashEmbedder(8, seed=3))
    assert rec.calls == []


class Windowed(HashEmbedder):
    """A test embedder that reads 120 characters per input: its identity records a chunk policy."""

    input_window = InputWindow(max_chars=120)

    @property
    def embedder_identity(self):
        return {"kind": "windowed-test", "dimension": self.embedding_dimension}


def test_records_chunked_by_the_old_policy_are_rechunked_caller_chunks_kept():
    old = HashEmbedder(OLD_DIM)
    standin = ReembedStandIn(OLD_DIM, identity_of(old))
    long = " ".join(f"word{i}" for i in range(60))  # about 420 characters: one legacy chunk
    standin.add("memory", "long", long, [long], old.embed([long]).tolist())
    standin.add("memory", "own", "short content", ["a caller's own index text"], old.embed(["x"]).tolist())
    standin.add("memory", "short", "short", ["short"], old.embed(["short"]).tolist())
    conn, rec = _connect(standin)
    new = Windowed(OLD_DIM, seed=3)
    result = reembed_store(conn, new, memory_store_id="mystore", batch_size=2)
    assert result.embedder["chunking"]["unit"] == "chars"
    assert (result.rechunked, result.kept) == (1, 1)
    rows = [c["text"] for k, c in sorted(standin.base["chunks"].items()) if k[1] == "long"]
    assert len(rows) > 1 and all(len(t) <= 120 for t in rows)
    assert standin.base["chunks"][("memory", "own", 1)]["text"] == "a caller's own index text"
    assert _vectors_of(standin, new)


def test_cli_reembed_on_an_oracle_store(monkeypatch):
    """Before: ``oramem --db oracle://... reembed`` said "no database at oracle://..."."""
    from oramem.cli import cli
    from oramem.cli import cmd_backup

    standin = _store(3)
    conn, rec = _connect(standin)
    seen = []
    monkeypatch.setattr(cmd_backup, "oracle_connect", lambda user, dsn: seen.append((user, dsn)) or conn)
    out = CliRunner().invoke(cli, ["--db", "oracle://scott@localhost:1521/FREEPDB1", "--store", "mystore",
                                   "--embed-dim", "16", "--json", "reembed", "--batch-size", "2"])
    assert out.exit_code == 0, out.output
    doc = json.loads(out.output)
    assert seen == [("scott", "localhost:1521/FREEPDB1")]
    assert doc["memory_store_id"] == "MYSTORE" and doc["vector_dim"] == 16 and doc["total"] == 3
    assert doc["embedder"] == identity_of(HashEmbedder(16)) and doc["previous"] == identity_of(HashEmbedder(OLD_DIM))
    assert rec.calls[-1].kind == "close"
    bad = CliRunner().invoke(cli, ["--db", "oracle://nobody", "reembed"])
    assert bad.exit_code == 2 and "oracle://USER@HOST:PORT/SERVICE" in bad.output


def test_a_hybrid_store_takes_only_its_own_embedder_and_is_rechunked_with_it():
    """A HYBRID store's hybrid vector index embeds with its in-database model: another embedder
    would put a second kind of vectors in it, so only the recorded one (a re-chunk) is taken."""
    old = Windowed(OLD_DIM, seed=3)
    legacy = {k: v for k, v in identity_of(old).items() if k != "chunking"}  # a store from before issue 28
    standin = ReembedStandIn(OLD_DIM, legacy, strategy="hybrid")
    standin.db["store"]["embedding_model"] = standin.base["store"]["embedding_model"] = "ALL_MINILM_L6_V2"
    long = " ".join(f"word{i}" for i in range(60))
    standin.add("memory", "long", long, [long], old.embed([long]).tolist())
    conn, rec = _connect(standin)
    with pytest.raises(ValueError, match="hybrid store"):
        reembed_store(conn, HashEmbedder(16), memory_store_id="mystore")
    assert standin.ddl == [] and standin.base["pending"] is None  # refused before anything was written
    result = reembed_store(conn, old, memory_store_id="mystore", batch_size=2)
    assert result.rechunked == 1 and result.embedder["chunking"]["unit"] == "chars"
    assert standin.base["store"]["embedder"] == identity_of(old)
    assert len([k for k in standin.base["chunks"] if k[1] == "long"]) > 1


def test_a_swap_another_session_undid_is_reported_and_a_rerun_finishes():
    """Between the dimension swap's commit (UPGRADING) and the finish, another session's
    repairing open may make the store READY again with its old column: the finish then has
    nothing to do, and the driver must not report success."""
    standin = _store(3)
    conn, rec = _connect(standin)
    new = HashEmbedder(16, seed=3)
    real_finish = rec.answers["oramem_admin.reembed_finish_json"]

    def repaired_first(call):
        standin._autonomous(lambda db: db["store"].update(state="READY"))  # the other session's mark_ready
        return real_finish(call)

    rec.answers["oramem_admin.reembed_finish_json"] = repaired_first
    with pytest.raises(StoreError, match="does not record the new embedder.*run the same reembed again"):
        reembed_store(conn, new, memory_store_id="mystore", batch_size=2)
    assert standin.base["store"]["vector_dim"] == OLD_DIM  # still the old vectors, nothing lost
    rec.answers["oramem_admin.reembed_finish_json"] = real_finish
    result = reembed_store(conn, new, memory_store_id="mystore", batch_size=2)
    assert result.vector_dim == 16 and result.rows == 0 and _vectors_of(standin, new)


def test_a_store_whose_knowledge_tables_hold_vectors_is_refused_before_anything_changes():
    """rek43: the Oracle reembed moves the retrieval rows only; a store with knowledge vectors
    (facts, entities, events ... of KnowledgeMemory) would keep them in the old embedder's
    space, so begin refuses it before the target or the shadow column is written."""
    standin = _store(3)
    standin._autonomous(lambda db: db.update(kg_vectors=2))
    conn, rec = _connect(standin)
    with pytest.raises(ValueError, match=r"knowledge tables \(KnowledgeMemory\) that hold vectors.*Keep this embedder"):
        reembed_store(conn, HashEmbedder(OLD_DIM, seed=3), memory_store_id="mystore")
    assert _steps(rec) == ["begin"]
    assert standin.ddl == [] and standin.base["pending"] is None
    assert standin.base["store"]["embedder"] == identity_of(HashEmbedder(OLD_DIM))


def test_knowledge_vectors_written_during_the_reembed_stop_the_swap():
    """A KnowledgeMemory writing while the batches run: the swap transaction refuses, rolls
    back, and the store keeps its old embedder and vectors (no state with the new embedder
    and knowledge vectors of the old one)."""
    standin = _store(4)
    conn, rec = _connect(standin)

    def knowledge_write(n):
        if n == 2:
            standin._autonomous(lambda db: db.update(kg_vectors=1))

    with pytest.raises(ValueError, match="knowledge tables"):
        reembed_store(conn, Hooked(OLD_DIM, knowledge_write), memory_store_id="mystore", batch_size=2)
    steps = _steps(rec)
    assert steps[-2:] == ["swap", "rollback"]
    assert standin.base["store"]["embedder"] == identity_of(HashEmbedder(OLD_DIM))
    assert _vectors_of(standin, HashEmbedder(OLD_DIM))
