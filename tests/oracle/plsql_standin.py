"""A stand-in for the store packages' JSON calls (``oramem_store.*_json``, ``oramem_search``),
kept in a dict, for runs over the recording fake that need the store to remember what was
written (the knowledge layer's write / retrieve / jobs / forget). It answers in the formats of
plsql/README.md ("JSON payloads"); it is not the PL/SQL: what the packages do is checked by the
text tests in tests/plsql and, on a live database, by tests/contract. Search returns no hits
(the knowledge layer's own reads run as real SQL in :class:`fakes.SQLBackend`)."""

from __future__ import annotations

import json
from typing import Any

from .fakes import Call, FakeLOB


def _text(v: Any) -> Any:
    return v.data if isinstance(v, FakeLOB) else v


class StoreStandIn:
    FIELDS = ("id", "record_type", "content", "timestamp", "metadata", "thread_id", "user_id", "agent_id",
              "role", "created_at", "expires_at")

    def __init__(self) -> None:
        self.records: dict[tuple[str, str], dict] = {}
        self.seq = 0
        #: the store's recorded embedder identity (ORAMEM_STORES.EMBEDDER; None: none recorded):
        #: a test sets it to play another session's reembed (ora44)
        self.embedder: Any = None

    def _check_embedder(self, req: dict, where: str, what: str) -> None:
        """oramem_admin.check_embedder, as add_json / update_json / search_json call it (ora44):
        a request's "embedder" (absent or null: nothing checked; not an object: -20002) is
        refused with -20108 when the store records another one (same_identity's rule, which
        same_embedder restates), before anything is read or written."""
        from oramem.embedders.identity import same_identity

        from .fakes import db_error

        sent = req.get("embedder")
        if sent is None:
            return
        if not isinstance(sent, dict):
            raise db_error(20002, f"{where}.embedder must be a JSON object (an oramem embedder identity) or null")
        if self.embedder is not None and not same_identity(self.embedder, sent):
            raise db_error(20108, f"embedder: store MYSTORE was moved to the embedder {json.dumps(self.embedder)} "
                                  f"(oramem reembed, by another session or store object) after this store object "
                                  f"was opened with {json.dumps(sent)}; vectors of different embedders are not "
                                  f"comparable, so {what}. Close this store object and open a new one with the "
                                  "embedder the store records")

    def install(self, answers: dict) -> None:
        answers.update({
            "oramem_store.add_json": self.add, "oramem_store.get_json": self.get,
            "oramem_store.update_json": self.update, "oramem_store.delete_record_json": self.delete,
            "oramem_store.list_json": self.list, "oramem_search.search_json": self.search,
            "oramem_store.delete_thread_json": self.delete_thread,
        })

    def add(self, call: Call) -> str:
        batch = json.loads(_text(call.binds["in_batch"]))
        self._unknown(batch, self.ADD_KEYS, "add batch")
        for i, r in enumerate(batch["records"]):
            self._unknown(r, self.RECORD_KEYS, f"records[{i}]")
            self._nested(r, f"records[{i}]")
        self._check_embedder(batch, "add batch", "nothing was written")
        records = self._resolve(batch["records"], str(batch.get("on_conflict") or "fail").lower())
        ids = []
        for r in records:
            self.seq += 1
            rec = {k: r.get(k) for k in self.FIELDS}
            rec["seq_no"] = self.seq
            rec["created_at"] = rec["created_at"] or "2025-01-01T12:00:00.000000Z"
            self.records[(rec["record_type"], rec["id"])] = rec
            ids.append(rec["id"])
        return json.dumps(ids)

    def _resolve(self, records: list, mode: str) -> list:
        """add_json's step 2 (ids already stored), before anything is written: fail refuses
        the call (-20005), skip leaves those records out, replace deletes the stored ones,
        except that a stored record of another user or agent than the line's (not a thread
        row) refuses the call with -20005 naming the ids, nothing deleted (red40, ora44)."""
        from .fakes import db_error

        stored = sorted((k for k in ((r["record_type"], r["id"]) for r in records) if k in self.records),
                        key=lambda k: (k[1], k[0]))
        if not stored:
            return records
        if mode == "fail":
            raise db_error(20005, f"record id {stored[0][1]} already exists in store MYSTORE; "
                                  "nothing of this call was stored")
        if mode == "skip":
            return [r for r in records if (r["record_type"], r["id"]) not in stored]
        wanted = {(r["record_type"], r["id"]): (r.get("agent_id"), r.get("user_id")) for r in records}
        foreign = [k for k in stored if k[0] != "thread"
                   and wanted[k] != (self.records[k].get("agent_id"), self.records[k].get("user_id"))]
        if foreign:
            listed = ", ".join(f"'{i}' ({t})" for t, i in foreign[:5])
            more = f" and {len(foreign) - 5} more" if len(foreign) > 5 else ""
            raise db_error(20005, f"record_ids stored for another user or agent than the new records name: "
                                  f"{listed}{more}; replace only replaces a record of the same user and agent")
        for k in stored:
            del self.records[k]
        return records

    def get(self, call: Call) -> Any:
        rec = self.records.get((call.binds["in_record_type"], call.binds["in_record_id"]))
        return json.dumps(rec) if rec else None

    def update(self, call: Call) -> int:
        req = json.loads(_text(call.binds["in_request"]))
        self._unknown(req, self.UPDATE_KEYS, "update request")
        self._nested(req, "update request")
        retrieval = req.get("retrieval") or "keep"
        for member, reader in (("chunks", "replace"), ("vectors", "revector")):
            if member in req and retrieval != reader:
                from .fakes import db_error

                raise db_error(20002, f"update request.{member} is read with \"retrieval\": \"{reader}\" only "
                                      f"(retrieval is {retrieval}, so it would be ignored)")
        self._check_embedder(req, "update request", "nothing was written")
        if "ttl" in req:
            self._check_ttl(req["record_type"], req["ttl"], "update request.ttl")
        rec = self.records.get((req["record_type"], req["record_id"]))
        if rec is None:
            return 0
        for k in ("content", "metadata", "timestamp"):
            if k in req:
                rec[k] = req[k]
        return 1

    def _event(self, keys: list, reason: str, threads: tuple = ()) -> dict:
        return {"memory_store_id": "MYSTORE", "records": [list(k) for k in keys], "thread_ids": list(threads),
                "user_ids": [], "agent_ids": [], "reason": reason}

    def delete(self, call: Call) -> str:
        key = (call.binds["in_record_type"], call.binds["in_record_id"])
        if key[0] == "thread":
            return self._delete_thread(key[1])
        if key[0] in ("user_profile", "agent_profile") and call.binds.get("in_cascade") == 1:
            return self._cascade(key, call.binds.get("in_reason"))
        rec = self.records.pop(key, None)
        return json.dumps({"count": int(rec is not None), "event": self._event([key], "delete") if rec else None})

    def _cascade(self, key: tuple, reason: Any) -> str:
        """An actor's cascade as far as the knowledge layer sees it: the profile and the actor's
        own records go, and the event names the actor (``user_ids`` / ``agent_ids``, as
        ``delete_record_json`` does even when no row was left, S14) with the reason
        ``forget`` or ``cascade`` (and ``"knowledge": "caller"`` for ``in_reason 'erase'``).
        Threads removed whole (SC-13.3) are not emulated."""
        col = "user_id" if key[0] == "user_profile" else "agent_id"
        keys = [k for k, r in self.records.items() if k == key or (r.get(col) == key[1] and k[0] not in
                                                                     ("user_profile", "agent_profile"))]
        existed = key in self.records
        for k in keys:
            del self.records[k]
        event = self._event(keys, "forget" if reason == "forget" else "cascade")
        event["user_ids" if col == "user_id" else "agent_ids"] = [key[1]]
        event["actor_thread_ids"] = []
        if reason == "erase":
            event["knowledge"] = "caller"
        return json.dumps({"count": int(existed), "event": event})

    def _delete_thread(self, tid: str) -> str:
        keys = [k for k, r in self.records.items() if r.get("thread_id") == tid or k == ("thread", tid)]
        for k in keys:
            del self.records[k]
        return json.dumps({"count": int(("thread", tid) in keys), "event": self._event(keys, "delete_thread", (tid,))})

    def delete_thread(self, call: Call) -> str:
        return self._delete_thread(call.binds["in_thread_id"])

    #: the members list_json / search_json read; any other is -20002 there (oramem_filter.check_keys, red32)
    LIST_KEYS = {"record_type", "limit", "thread", "user", "agent", "metadata_filter"}
    SEARCH_KEYS = {"strategy", "k", "query_text", "query_vector", "thread", "user", "agent", "record_types",
                   "metadata_filter", "exact", "tail_handicap", "keyword_language", "hybrid", "embedder"}

    #: oramem_registry.is_scoped_type: a list of any other type takes no scope (left36)
    SCOPED_TYPES = frozenset({"message", "memory", "guideline", "fact", "preference"})

    ADD_KEYS = {"records", "on_conflict", "embedder"}
    RECORD_KEYS = {"id", "record_type", "content", "thread_id", "user_id", "agent_id", "role", "timestamp", "metadata",
                   "restored_times", "ttl", "chunks"}
    UPDATE_KEYS = {"record_type", "record_id", "retrieval", "content", "chunks", "vectors", "metadata", "timestamp",
                   "ttl", "embedder"}

    #: the members of the nested objects of an add record / update request (left36): ttl
    #: (ttl_expiry), restored_times (add_json), each chunk (collect_passages / collect_chunks)
    TTL_KEYS = {"days", "anchor"}
    RESTORED_KEYS = {"created_at", "expires_at"}
    CHUNK_KEYS = {"text", "vector", "keyword_text"}

    @classmethod
    def _nested(cls, obj: dict, where: str) -> None:
        if isinstance(obj.get("ttl"), dict):
            cls._unknown(obj["ttl"], cls.TTL_KEYS, f"{where}.ttl")
        if isinstance(obj.get("restored_times"), dict):
            cls._unknown(obj["restored_times"], cls.RESTORED_KEYS, f"{where}.restored_times")
        for i, chunk in enumerate(obj.get("chunks") or ()):
            if isinstance(chunk, dict):
                cls._unknown(chunk, cls.CHUNK_KEYS, f"{where}.chunks[{i}]")

    @classmethod
    def _check_ttl(cls, record_type: str, ttl: Any, where: str) -> None:
        """update_json's ttl checks, run before the record is looked up (fake39, after left36):
        the type takes a ttl (-20001), the ttl is an object (-20002) of known members
        (-20002), days an integer >= 0 or null, anchor created_at or timestamp (check_ttl)."""
        from .fakes import db_error

        if record_type not in cls.SCOPED_TYPES:
            raise db_error(20001, "ttl applies only to message, memory, guideline, fact and preference records")
        if not isinstance(ttl, dict):
            raise db_error(20002, f'{where} must be {{"days": n|null, "anchor": ...}}')
        cls._unknown(ttl, cls.TTL_KEYS, where)
        days = ttl.get("days")
        if days is not None:
            if isinstance(days, bool) or not isinstance(days, (int, float)):
                raise db_error(20002, f"{where}.days must be an integer or null")
            if days < 0 or days != int(days):
                raise db_error(20001, f"{where}.days must be an integer >= 0")
        anchor = ttl.get("anchor")
        if anchor is not None and not isinstance(anchor, str):
            raise db_error(20002, f"{where}.anchor must be a string or null")
        if (anchor or "created_at").lower() not in ("created_at", "timestamp"):
            raise db_error(20001, f"{where}.anchor must be created_at or timestamp")

    @staticmethod
    def _unknown(req: dict, known: set, what: str) -> None:
        from .fakes import db_error

        for key in req:
            if key not in known:
                raise db_error(20002, f"{what}: unknown key \"{key}\" (accepted: {', '.join(sorted(known))})")

    @classmethod
    def _check_keys(cls, req: dict, known: set, what: str) -> None:
        cls._unknown(req, known, what)
        for dim in ("thread", "user", "agent"):
            scope = req.get(dim)
            if isinstance(scope, dict):
                cls._unknown(scope, {"match", "value"}, dim)

    def search(self, call: Call) -> str:
        req = json.loads(_text(call.binds["in_request"]))
        self._check_keys(req, self.SEARCH_KEYS, "search request")
        self._check_embedder(req, "search request", "nothing was searched")
        return "[]"

    def list(self, call: Call) -> str:
        req = json.loads(_text(call.binds["in_request"]))
        self._check_keys(req, self.LIST_KEYS, "list request")
        rows = [r for r in self.records.values() if r["record_type"] == req["record_type"]]
        for dim in ("thread", "user", "agent"):
            # list_json's scope: the raw column (N6); an unscoped type refuses one (left36)
            scope = req.get(dim) or {}
            match = str(scope.get("match") or "any").lower()
            if match == "any":
                continue
            if req["record_type"] not in self.SCOPED_TYPES:
                from .fakes import db_error

                raise db_error(20001, f"list request.{dim}: {req['record_type']} records are not listed by {dim} "
                                      "(SC-3.3: the store's list ignores a scope for them)")
            rows = [r for r in rows if (r.get(f"{dim}_id") == scope.get("value") if match == "equals"
                                        else r.get(f"{dim}_id") is None)]
        if "metadata_filter" in req:
            rows = self._filtered(rows, req["metadata_filter"])
        rows.sort(key=lambda r: r["seq_no"])
        return json.dumps(rows[-int(req.get("limit") or len(rows) or 1):])


    @staticmethod
    def _filtered(rows: list, metadata_filter: Any) -> list:
        """list_json's ``metadata_filter`` (fake39): null keeps the records without metadata
        (``r.metadata IS NULL``), an object keeps those it matches, anything else is -20004;
        an invalid filter is -20004 whether or not a row is left. A filter is evaluated by the
        SQLite engine's own compiler (:func:`oramem.sqlite.filters_sql.compile_filter` over
        the metadata as that engine stores it, :func:`oramem.sqlite.records.dump_metadata`),
        in an in-memory database of the engine's SQLite build, so the stand-in has no filter
        language of its own."""
        from contextlib import closing

        from oramem.filters import validate_filter
        from oramem.sqlite._sqlite import sqlite3
        from oramem.sqlite.filters_sql import compile_filter
        from oramem.sqlite.records import dump_metadata

        from .fakes import db_error

        if metadata_filter is None:
            return [r for r in rows if r.get("metadata") is None]
        if not isinstance(metadata_filter, dict):
            raise db_error(20004, "metadata_filter must be a JSON object or null")
        try:
            sql, params = compile_filter(validate_filter(metadata_filter), column="m.metadata")
        except (ValueError, TypeError) as exc:
            raise db_error(20004, f"metadata_filter: {exc}") from None
        with closing(sqlite3.connect(":memory:")) as db:
            query = f"SELECT {sql} FROM (SELECT :standin_metadata AS metadata) m"
            return [r for r in rows
                    if db.execute(query, {**params, "standin_metadata": dump_metadata(r.get("metadata"))}).fetchone()[0]]


class CatalogStandIn:
    """``oramem_admin.open_store`` / ``describe_store`` of one store, as far as the embedder
    identity goes (issue 28; plsql/oramem_admin.pkb, ``reconcile`` and ``adopt_embedder``):
    an open with another embedder than the recorded one is refused with -20108 before
    anything changes; a store without one adopts the caller's when it holds vectors
    (``vector_dim`` set, strategy vector or hybrid), without ``chunking`` when it already holds
    retrieval rows (``has_rows``); the reply is the settings in force with ``embedder``.
    The PL/SQL's own rule is checked as text in tests/plsql/test_embedder_identity_plsql.py."""

    def __init__(self, settings_out: dict, recorded: Any = None, has_rows: bool = False) -> None:
        self.row = dict(settings_out, embedder=recorded)
        self.has_rows = has_rows
        self.opens: list[dict] = []

    def install(self, answers: dict) -> None:
        answers.update({"oramem_admin.open_store": self.open, "oramem_admin.describe_store": self.describe})

    def open(self, call: Call) -> str:
        from oramem.embedders.identity import same_identity

        from .fakes import db_error

        request = json.loads(_text(call.binds["in_settings"]))
        self.opens.append(request)
        asked, recorded = request.get("embedder"), self.row.get("embedder")
        if asked is not None and recorded is not None and not same_identity(recorded, asked):
            raise db_error(20108, f"embedder: store {self.row['memory_store_id']} was built with the embedder "
                                  f"{json.dumps(recorded)}, this open uses {json.dumps(asked)}; vectors of different "
                                  "embedders are not comparable. Open it with the embedder that built it, or "
                                  "move the store to the new one (oramem reembed; oramem_admin.reembed_begin_json "
                                  "and the calls after it)")
        if (asked is not None and recorded is None and self.row.get("vector_dim") is not None
                and self.row.get("search_strategy") in ("vector", "hybrid")):
            self.row["embedder"] = {k: v for k, v in asked.items() if not (self.has_rows and k == "chunking")}
        return json.dumps(self.row)

    def describe(self, call: Call) -> str:
        return json.dumps(self.row)


class ErasureCatalogStandIn:
    """``oramem_admin.set_option`` / ``get_options_json`` / ``log_erasure`` /
    ``get_erasure_log_json`` over the catalog tables of a :class:`fakes.SQLBackend`
    (``create_catalog``), as the PL/SQL writes them (plsql/oramem_admin.pkb: a MERGE of the
    option's JSON text; the receipt's id, time and subject hash in their columns), so the
    knowledge layer's SQL reads of the catalog see what a ``forget`` over the fake wrote."""

    def __init__(self, backend: Any) -> None:
        self.db = backend.db

    def install(self, answers: dict) -> None:
        answers.update({
            "oramem_admin.set_option": self.set_option, "oramem_admin.get_options_json": self.get_options,
            "oramem_admin.log_erasure": self.log_erasure, "oramem_admin.get_erasure_log_json": self.get_log,
        })

    def set_option(self, call: Call) -> None:
        b = call.binds
        self.db.execute("DELETE FROM oramem_store_options WHERE memory_store_id = ? AND name = ?",
                        (b["in_store_id"], b["in_name"]))
        if b["in_value"] is not None:
            self.db.execute("INSERT INTO oramem_store_options (memory_store_id, name, value) VALUES (?, ?, ?)",
                            (b["in_store_id"], b["in_name"], _text(b["in_value"])))

    def get_options(self, call: Call) -> str:
        rows = self.db.execute("SELECT name, value FROM oramem_store_options WHERE memory_store_id = ? ORDER BY name",
                               (call.binds["in_store_id"],)).fetchall()
        return "{" + ",".join(f"{json.dumps(n)}:{v}" for n, v in rows) + "}"

    def log_erasure(self, call: Call) -> None:
        receipt = _text(call.binds["in_receipt"])
        e = json.loads(receipt)
        self.db.execute("INSERT INTO oramem_erasure_log (memory_store_id, receipt_id, erased_at, subject_hash, receipt) "
                        "VALUES (?, ?, ?, ?, ?) ON CONFLICT (memory_store_id, receipt_id) DO UPDATE SET "
                        "receipt = excluded.receipt",
                        (call.binds["in_store_id"], e["receipt_id"], e["erased_at"], e["subject_hash"], receipt))

    def get_log(self, call: Call) -> str:
        rows = self.db.execute("SELECT receipt FROM oramem_erasure_log WHERE memory_store_id = ? "
                               "ORDER BY erased_at, receipt_id", (call.binds["in_store_id"],)).fetchall()
        return "[" + ",".join(r[0] for r in rows) + "]"


def standin_store(dim: int = 8, store_id: str = "mystore") -> tuple[Any, Any]:
    """An ``OracleDBMemoryStore`` (HashEmbedder ``dim``, CREATE_IF_NECESSARY) over the recording
    fake whose store calls this stand-in answers; returns ``(store, recorder)``. The caller
    closes the store."""
    from oramem import OracleDBMemoryStore, SchemaPolicy
    from oramem.embedders import HashEmbedder

    from .fakes import FakePool, Recorder
    from .test_driver_fake import SETTINGS_OUT

    rec = Recorder()
    rec.answers["oramem_admin.open_store"] = json.dumps(dict(SETTINGS_OUT, vector_dim=dim))
    StoreStandIn().install(rec.answers)
    store = OracleDBMemoryStore(HashEmbedder(dim), FakePool(rec), schema_policy=SchemaPolicy.CREATE_IF_NECESSARY,
                                memory_store_id=store_id)
    return store, rec
