"""A stand-in for the reembed calls of plsql/oramem_admin.pks ("Re-embedding") and
``oramem_store.lock_retrieval_rows``, over one store kept in dicts, for runs of
:func:`oramem.oracle_reembed.reembed_store` over the recording fake. It follows the package
text (tests/plsql/test_reembed_plsql.py checks that text): the shadow column EMBEDDING_NEW
of the retrieval rows, the pending target in the store option ``reembed.target``, a save
that writes only rows still there with the text embedded, a same-dimension swap in the
caller's transaction, and a dimension swap by idempotent DDL steps (each commits).

Transactions: what a data call writes is the caller's until the connection commits
(:class:`TxConnection`); a rollback drops it. DDL and the autonomous steps commit at once.
It also answers the calls the re-chunk pass makes (open/describe, export, get, update) and
lets a test erase a user as a committed ``forget`` would (records and, by ON DELETE
CASCADE, their retrieval rows). It is not the PL/SQL; static-checked, not run against Oracle.
"""

from __future__ import annotations

import copy
import json
from typing import Any, Optional

from oramem.embedders.identity import same_identity

from .fakes import Call, FakeConnection, FakeLOB, Recorder, db_error
from .test_driver_fake import SETTINGS_OUT


def _text(v: Any) -> Any:
    return v.data if isinstance(v, FakeLOB) else v


class ReembedStandIn:
    def __init__(self, dim: int, identity: Optional[dict], strategy: str = "vector") -> None:
        self.db: dict[str, Any] = {
            "store": dict(SETTINGS_OUT, vector_dim=dim, search_strategy=strategy, embedder=identity, state="READY",
                          keyword_language="english", supported_strategies=[strategy]),
            "records": {},          # (type, id) -> {"content", "user_id", "seq_no"}
            "chunks": {},           # (type, id, no) -> {"text", "embedding", "embedding_new"}
            "new_column": None,     # the shadow column's dimension, None when it does not exist
            "pending": None,        # the option reembed.target: {"embedder", "vector_dim"}
            "hnsw": True,
            "kg_vectors": 0,        # rows of the knowledge tables with a vector (knowledge_vectors_exist)
        }
        self.base = copy.deepcopy(self.db)   # what is committed
        self.ddl: list[str] = []             # DDL run, in order (each commits)
        self.crash_after_ddl: Optional[int] = None   # raise after this many more DDL statements
        self.seq = 0

    # -- set-up and transactions ------------------------------------------------------------
    def add(self, rtype: str, rid: str, content: str, chunks: list[str], vectors: list[list[float]],
            user_id: Optional[str] = None) -> None:
        self.seq += 1
        for db in (self.db, self.base):
            db["records"][(rtype, rid)] = {"content": content, "user_id": user_id, "seq_no": self.seq}
            for no, (text, vec) in enumerate(zip(chunks, vectors), 1):
                db["chunks"][(rtype, rid, no)] = {"text": text, "embedding": list(vec), "embedding_new": None}

    def erase_user(self, user_id: str) -> None:
        """A committed forget: the user's records go, their retrieval rows with them (ON DELETE CASCADE)."""
        for db in (self.db, self.base):
            gone = [k for k, r in db["records"].items() if r["user_id"] == user_id]
            for key in gone:
                del db["records"][key]
                for ck in [c for c in db["chunks"] if c[:2] == key]:
                    del db["chunks"][ck]

    def commit(self) -> None:
        self.base = copy.deepcopy(self.db)

    def rollback(self) -> None:
        self.db = copy.deepcopy(self.base)

    def _autonomous(self, change: Any) -> None:
        change(self.db)
        change(self.base)

    def _run_ddl(self, text: str, change: Any) -> None:
        if self.crash_after_ddl is not None:
            if self.crash_after_ddl == 0:
                self.crash_after_ddl = None
                raise db_error(3113, "ORA-03113: end-of-file on communication channel")
            self.crash_after_ddl -= 1
        self.ddl.append(text)
        self._autonomous(change)

    def install(self, answers: dict) -> None:
        answers.update({
            "oramem_admin.reembed_begin_json": self.begin, "oramem_store.lock_retrieval_rows": self.lock,
            "oramem_admin.reembed_rows_json": self.rows, "oramem_admin.reembed_save_json": self.save,
            "oramem_admin.reembed_swap_json": self.swap, "oramem_admin.reembed_finish_json": self.finish,
            "oramem_admin.open_store": self.settings, "oramem_admin.describe_store": self.settings,
            "oramem_store.export_json": self.export, "oramem_store.get_json": self.get,
            "oramem_store.update_json": self.update,
        })

    # -- the reembed calls --------------------------------------------------------------------
    def _same(self, target: dict) -> bool:
        pending = self.db["pending"]
        return pending is not None and same_identity(pending["embedder"], target)

    def begin(self, call: Call) -> str:
        b = call.binds
        target, dim, restart = json.loads(_text(b["in_target"])), b["in_vector_dim"], b["in_restart"]
        store = self.db["store"]
        if store["vector_dim"] is None or store["search_strategy"] not in ("vector", "hybrid"):
            raise db_error(20001, f"store MYSTORE is a {store['search_strategy']} store: it holds no vectors to re-embed")
        if store["search_strategy"] == "hybrid" and (store["embedder"] is None
                                                     or not same_identity(store["embedder"], target)):
            raise db_error(20001, "store MYSTORE is a hybrid store: its hybrid vector index embeds with the "
                                  "in-database model ..., so it can be re-embedded (and re-chunked) only with the "
                                  "embedder it records; ...")
        out: dict[str, Any] = {"swapping": False}
        if store["state"] == "READY":
            self._refuse_knowledge_vectors()
        if store["state"] == "UPGRADING" and self.db["pending"] is not None:
            if not self._same(target):
                raise db_error(20106, "store MYSTORE is swapping in the vectors of a reembed to ...")
            out["swapping"] = True
        elif store["state"] != "READY":
            raise db_error(20106, f"store MYSTORE is in state {store['state']}; it cannot be re-embedded")
        else:
            if self.db["pending"] is not None and not self._same(target) and restart == 0:
                return json.dumps({"swapping": False, "started": False, "pending": self.db["pending"]["embedder"]})
            if self.db["new_column"] is not None and (not self._same(target) or self.db["pending"]["vector_dim"] != dim):
                self._run_ddl("SET UNUSED (embedding_new)", lambda db: _drop_new(db))
            self._autonomous(lambda db: db.update(pending={"embedder": target, "vector_dim": dim}))
            if self.db["new_column"] is None:
                self._run_ddl(f"ADD (embedding_new VECTOR({dim}, FLOAT32))", lambda db: db.update(new_column=dim))
        chunks = self.db["chunks"].values()
        resumed = (sum(c["embedding_new"] is not None for c in chunks) if self.db["new_column"] is not None
                   else len(chunks))
        out.update(started=True, pending=target, previous=store["embedder"], resumed=resumed, total=len(chunks),
                   vector_dim=store["vector_dim"], search_strategy=store["search_strategy"],
                   embedding_model=store["embedding_model"])
        return json.dumps(out)

    def _refuse_knowledge_vectors(self) -> None:
        """refuse_knowledge_vectors (rek43): the knowledge tables hold a vector."""
        if self.db["kg_vectors"]:
            raise db_error(20001, "store MYSTORE has knowledge tables (KnowledgeMemory) that hold vectors: oramem "
                                  "reembed on Oracle re-embeds the retrieval rows only and would leave the facts', "
                                  "entities', events' and observations' vectors in the old embedder's space, so "
                                  "nothing was changed. Keep this embedder, or create a new store with the new one "
                                  "and write its knowledge there again (on SQLite, oramem reembed re-embeds the "
                                  "knowledge tables too)")

    def lock(self, call: Call) -> None:
        return None  # the lock itself is in the statement sequence (Recorder.calls)

    def rows(self, call: Call) -> str:
        after = call.binds["in_after"]
        after = None if after is None else tuple(json.loads(_text(after)))
        keys = sorted(k for k, c in self.db["chunks"].items() if c["embedding_new"] is None and (after is None or k > after))
        return json.dumps([[*k, self.db["chunks"][k]["text"]] for k in keys[: call.binds["in_limit"]]])

    def _check(self, target_text: Any) -> dict:
        if not self._same(json.loads(_text(target_text))):
            raise db_error(20201, "the reembed of store MYSTORE was taken over by another run (or finished, or the "
                                  "store was dropped); stopped without swapping")
        return self.db["pending"]

    def save(self, call: Call) -> int:
        pending = self._check(call.binds["in_target"])
        rows = json.loads(_text(call.binds["in_rows"]))
        for i, row in enumerate(rows):
            if len(row[4]) != pending["vector_dim"]:
                raise db_error(20006, f"in_rows[{i}]: the vector has {len(row[4])} values, the reembed target "
                                      f"{pending['vector_dim']}")
        saved = 0
        for rtype, rid, no, text, vec in rows:
            chunk = self.db["chunks"].get((rtype, rid, no))
            if chunk is not None and chunk["text"] == text:   # still there, with the text embedded
                chunk["embedding_new"] = vec
                saved += 1
        return saved

    def swap(self, call: Call) -> str:
        pending = self._check(call.binds["in_target"])
        store = self.db["store"]
        missing = sum(c["embedding_new"] is None for c in self.db["chunks"].values())
        if missing:
            raise db_error(20001, f"{missing} retrieval row(s) of store MYSTORE have no new vector")
        self._refuse_knowledge_vectors()
        if pending["vector_dim"] == store["vector_dim"]:
            for c in self.db["chunks"].values():
                c["embedding"] = c["embedding_new"]
            _record(self.db)
            return json.dumps({"total": len(self.db["chunks"]), "ddl": False})
        store["state"] = "UPGRADING"
        return json.dumps({"total": len(self.db["chunks"]), "ddl": True})

    def finish(self, call: Call) -> str:
        target = json.loads(_text(call.binds["in_target"]))
        store, pending = self.db["store"], self.db["pending"]
        if store["state"] == "UPGRADING" and pending is not None:
            if not self._same(target):
                raise db_error(20201, "the reembed of store MYSTORE was taken over by another run; stopped")
            if self.db["hnsw"]:
                self._run_ddl("DROP INDEX OM_MYSTORE_HNSW", lambda db: db.update(hnsw=False))
            if self.db["new_column"] is not None:
                self._run_ddl("SET UNUSED (embedding)", lambda db: [c.update(embedding=None) for c in db["chunks"].values()])
                self._run_ddl("RENAME COLUMN embedding_new TO embedding", _rename_new)
            if not self.db["hnsw"]:
                self._run_ddl("CREATE VECTOR INDEX OM_MYSTORE_HNSW", lambda db: db.update(hnsw=True))
            self._autonomous(_record)
        elif store["state"] == "READY" and pending is None and self.db["new_column"] is not None:
            self._run_ddl("SET UNUSED (embedding_new)", _drop_new)
        return self.settings(call)

    # -- what the re-chunk pass calls -----------------------------------------------------------
    def settings(self, call: Call) -> str:
        return json.dumps(self.db["store"])

    def _record_json(self, key: tuple, rec: dict) -> dict:
        return {"id": key[1], "record_type": key[0], "content": rec["content"], "timestamp": None, "metadata": None,
                "thread_id": None, "user_id": rec["user_id"], "agent_id": None,
                "created_at": "2026-11-30T17:08:01.000000+00:00", "expires_at": None, "role": None,
                "seq_no": rec["seq_no"]}

    def export(self, call: Call) -> str:
        after, limit = call.binds["in_after_seq"], call.binds["in_limit"]
        items = sorted(((r["seq_no"], k, r) for k, r in self.db["records"].items() if r["seq_no"] > after))
        out = []
        for _, key, rec in items[:limit]:
            chunks = [{"text": c["text"], "vector": c["embedding"]}
                      for k, c in sorted(self.db["chunks"].items()) if k[:2] == key]
            out.append({"record": self._record_json(key, rec), "chunks": chunks or None})
        return json.dumps(out)

    def get(self, call: Call) -> Any:
        key = (call.binds["in_record_type"], call.binds["in_record_id"])
        rec = self.db["records"].get(key)
        return json.dumps(self._record_json(key, rec)) if rec else None

    def update(self, call: Call) -> int:
        req = json.loads(_text(call.binds["in_request"]))
        key = (req["record_type"], req["record_id"])
        if key not in self.db["records"]:
            return 0
        assert req.get("retrieval") == "replace", req  # the re-chunk pass replaces the rows
        for ck in [c for c in self.db["chunks"] if c[:2] == key]:
            del self.db["chunks"][ck]
        for no, ch in enumerate(req["chunks"], 1):
            self.db["chunks"][(*key, no)] = {"text": ch["text"], "embedding": ch["vector"], "embedding_new": None}
        return 1


def _drop_new(db: dict) -> None:
    db["new_column"] = None
    for c in db["chunks"].values():
        c["embedding_new"] = None


def _rename_new(db: dict) -> None:
    for c in db["chunks"].values():
        c["embedding"], c["embedding_new"] = c["embedding_new"], None
    db["new_column"] = None


def _record(db: dict) -> None:
    pending = db["pending"]
    db["store"].update(vector_dim=pending["vector_dim"], embedder=pending["embedder"], state="READY")
    db["pending"] = None


class TxConnection(FakeConnection):
    """The recording fake's connection whose commit and rollback reach the stand-in."""

    def __init__(self, rec: Recorder, standin: ReembedStandIn) -> None:
        super().__init__(rec)
        self.standin = standin

    @property
    def transaction_in_progress(self) -> bool:  # python-oracledb's: uncommitted changes on it
        return self.standin.db != self.standin.base

    def commit(self) -> None:
        super().commit()
        self.standin.commit()

    def rollback(self) -> None:
        super().rollback()
        self.standin.rollback()
