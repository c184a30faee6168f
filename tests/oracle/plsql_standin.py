r"""A stand-in for the store packages' JSON calls (``oramem_store.*_json``, ``oramem_search``),
kept in a dict, for runs over the recording fake that need the store to remember what was
written (the knowledge layer's write / retrieve / jobs / forget). It answers in the formats of
plsql/README.md ("JSON payloads"); it is not the PL/SQL: what the packages do is checked by the
text tests in tests/plsql and, on a live database, by tests/contract (the knowledge layer's
own reads run as real SQL in :class:`fakes.SQLBackend`).

What it models (fake40): the request checks of add / update / search / list with the
packages' error numbers, update's checks before the record is looked up; the ttl's expiry as
``ttl_expiry`` computes it (add and update; ``restored_times`` on add); SC-5.6 (an update of
an expired record without a ttl answers 0); and which records a search may return:
``search_json``'s candidate set (record types, expiry, the SC-6.2 scope of
``oramem_filter.scope_condition``, the metadata filter), only records with a retrieval row
(vector: a row with a vector).

What it does not model: the clock is :attr:`StoreStandIn.now` (a fixed time unless a test
sets it; new records get it as created_at), not SYSTIMESTAMP; get / list / delete do not hide
expired records; the ranking is not the packages': vector is the cosine distance of the
nearest row (plus ``tail_handicap`` on rows after the first, as ``vector_ranking``), exact or
not; keyword is the share of the query's words (lower-cased, ``\w+``) missing from the
record's content and row texts, no Oracle Text, stemming or score; hybrid is the union of the
two legs by the smaller distance, no fusion (``hybrid`` is checked for its members only); a
hybrid search without ``query_vector`` is refused (-20301), as the stand-in cannot embed the
query in the database as ``embed_query`` does (the Python driver sends the vector).
So a test over it can see WHICH records a search may return, not their scores or order
among near ties. add does not make the implicit thread rows of add_json's step 4 (SC-2.3):
a test that needs a thread row writes it (``restore_threads``)."""

from __future__ import annotations

import json
import math
import re
from datetime import datetime, timedelta, timezone
from typing import Any, Optional

from .fakes import Call, FakeLOB


def _text(v: Any) -> Any:
    return v.data if isinstance(v, FakeLOB) else v


class StoreStandIn:
    FIELDS = ("id", "record_type", "content", "timestamp", "metadata", "thread_id", "user_id", "agent_id",
              "role", "created_at", "expires_at")

    #: the stand-in's clock unless a test sets :attr:`now` (the created_at it always gave)
    NOW = "2025-01-01T12:00:00.000000Z"

    def __init__(self, vector_dim: Optional[int] = None, now: str = NOW) -> None:
        """``vector_dim``: the store's (None: a store without vectors, where a non-null
        vector is -20006 as in ``get_vector``); ``now``: the clock (ISO-8601)."""
        self.records: dict[tuple[str, str], dict] = {}
        #: each record's retrieval rows [{"text", "vector"}], as add / update wrote them
        self.rows: dict[tuple[str, str], list[dict]] = {}
        self.seq = 0
        self.vector_dim = vector_dim
        self.now = now
        #: the store's recorded embedder identity (ORAMEM_STORES.EMBEDDER; None: none recorded):
        #: a test sets it to play another session's reembed (ora44)
        self.embedder: Any = None
        #: the identities oramem_admin.check_embedder was called with (rek47)
        self.checks: list[dict] = []

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
            "oramem_admin.check_embedder": self.check_embedder,
        })

    def check_embedder(self, call: Call) -> None:
        """``oramem_admin.check_embedder`` called on its own (rek47: a KnowledgeMemory's check
        before it writes or compares knowledge-table vectors without a store call): the same
        rule as the "embedder" member. The driver sends JSON object text (checked before the
        call); anything else fails the test here rather than modelling the package's parse."""
        sent = json.loads(_text(call.binds["in_identity"]))
        assert isinstance(sent, dict), "oramem_admin.check_embedder: in_identity must be a JSON object"
        self.checks.append(sent)
        self._check_embedder({"embedder": sent}, "in_identity", str(call.binds["in_what"]))

    def add(self, call: Call) -> str:
        batch = json.loads(_text(call.binds["in_batch"]))
        self._unknown(batch, self.ADD_KEYS, "add batch")
        times = []
        for i, r in enumerate(batch["records"]):
            where = f"records[{i}]"
            self._unknown(r, self.RECORD_KEYS, where)
            self._nested(r, where)
            # add_json's times: restored_times as kept, else now and the ttl (ttl_expiry),
            # checked for every record before any is stored (fake40: the ttl's value rules too)
            from .fakes import db_error

            if self._string(r, "id", where) is None:
                raise db_error(20001, f"{where}.id is required")
            rtype = self._record_type(r.get("record_type"), f"{where}.record_type")
            ts = self._parse_utc(self._string(r, "timestamp", where, 64), f"{where}.timestamp")
            if r.get("restored_times") is not None:
                if r.get("ttl") is not None:
                    raise db_error(20001, f"{where}: give restored_times or ttl, not both")
                kept = r["restored_times"]
                if not isinstance(kept, dict):
                    raise db_error(20002, f'{where}.restored_times must be {{"created_at": "...", '
                                          '"expires_at": "..." | null}')
                created = self._parse_utc(self._string(kept, "created_at", f"{where}.restored_times", 64),
                                          f"{where}.restored_times.created_at")
                if created is None:
                    raise db_error(20001, f"{where}.restored_times.created_at is required")
                expires = self._parse_utc(self._string(kept, "expires_at", f"{where}.restored_times", 64),
                                          f"{where}.restored_times.expires_at")
                if expires is not None and rtype not in self.SCOPED_TYPES:
                    raise db_error(20001, f"{where}: a {rtype} record never expires; its restored_times.expires_at "
                                          "must be null")
            else:
                created, expires = self._parse_utc(self.now, "now"), None
                if r.get("ttl") is not None:
                    self._check_ttl(rtype, r["ttl"], f"{where}.ttl")
                    expires = self._ttl_expiry(r["ttl"], created, ts, f"{where}.ttl")
            rows = [self._row(c, f"{where}.chunks[{j}]") for j, c in enumerate(r.get("chunks") or ())]
            times.append((created, expires, rows))
        self._check_embedder(batch, "add batch", "nothing was written")
        kept = {id(r) for r in self._resolve(batch["records"], str(batch.get("on_conflict") or "fail").lower())}
        ids = []
        for r, (created, expires, rows) in zip(batch["records"], times):
            if id(r) not in kept:
                continue
            self.seq += 1
            rec = {k: r.get(k) for k in self.FIELDS}
            rec["seq_no"] = self.seq
            rec["created_at"] = self._utc_text(created)
            rec["expires_at"] = self._utc_text(expires)
            self.records[(rec["record_type"], rec["id"])] = rec
            self.rows[(rec["record_type"], rec["id"])] = rows
            ids.append(rec["id"])
        return json.dumps(ids)

    def _resolve(self, records: list, mode: str) -> list:
        """add_json's step 2 (ids already stored), before anything is written: fail refuses
        the call (-20005), skip leaves those records out, replace deletes the stored ones,
        except that a stored record of another user or agent than the line's (a thread row
        too: its opener, imp47) refuses the call with -20005 naming the ids, nothing deleted
        (red40, ora44)."""
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
        foreign = [k for k in stored
                   if wanted[k] != (self.records[k].get("agent_id"), self.records[k].get("user_id"))]
        if foreign:
            listed = ", ".join(f"'{i}' ({t})" for t, i in foreign[:5])
            more = f" and {len(foreign) - 5} more" if len(foreign) > 5 else ""
            threads = ("; a thread row says who opened the thread, which replace never changes (on_conflict "
                       '"skip" keeps the stored row)') if any(t == "thread" for t, _ in foreign) else ""
            raise db_error(20005, f"record_ids stored for another user or agent than the new records name: "
                                  f"{listed}{more}; replace only replaces a record of the same user and agent"
                                  f"{threads}")
        for k in stored:
            del self.records[k]
        return records

    def get(self, call: Call) -> Any:
        rec = self.records.get((call.binds["in_record_type"], call.binds["in_record_id"]))
        return json.dumps(rec) if rec else None

    def update(self, call: Call) -> int:
        """update_json: every member of the request is checked before the record is looked
        up (fake39 the ttl, fake40 the rest: content, metadata, timestamp, chunks, vectors),
        so a malformed one is refused whatever the record's state; then a missing record, or
        an expired one without a ttl (SC-5.6), answers 0; then the members are applied, the
        ttl from the record's created_at or (new) timestamp as ``ttl_expiry``."""
        from .fakes import db_error

        req = json.loads(_text(call.binds["in_request"]))
        if not isinstance(req, dict):
            raise db_error(20002, "update request must be a JSON object")
        self._unknown(req, self.UPDATE_KEYS, "update request")
        self._nested(req, "update request")
        rtype = self._record_type(req.get("record_type"), "record_type")
        rid = self._string(req, "record_id", "update request")
        if rid is None:
            raise db_error(20001, "record_id is required")
        retrieval = self._string(req, "retrieval", "update request", 32)
        retrieval = (retrieval or "keep").lower()
        if retrieval not in ("keep", "clear", "replace", "revector", "strip_vectors"):
            raise db_error(20001, "retrieval must be keep, clear, replace, revector or strip_vectors")
        for member, reader in (("chunks", "replace"), ("vectors", "revector")):
            if member in req and retrieval != reader:
                raise db_error(20002, f"update request.{member} is read with \"retrieval\": \"{reader}\" only "
                                      f"(retrieval is {retrieval}, so it would be ignored)")
        if not any(k in req for k in ("content", "metadata", "timestamp", "ttl")) and retrieval == "keep":
            raise db_error(20001, "update needs at least one of text, index_text, embedding, metadata, "
                                  "timestamp, ttl_days, ttl_anchor")
        self._check_embedder(req, "update request", "nothing was written")
        if "ttl" in req:
            self._check_ttl(rtype, req["ttl"], "update request.ttl")
        if "content" in req:
            if req["content"] is not None and not isinstance(req["content"], str):
                raise db_error(20002, "update request.content must be a string or null")
            if req["content"] is None and rtype in ("user_profile", "agent_profile"):
                raise db_error(20001, f"text=None is not allowed for {rtype} records")
        if req.get("metadata") is not None and not isinstance(req["metadata"], dict):
            raise db_error(20002, "update request.metadata must be a JSON object or null")
        ts = self._parse_utc(self._string(req, "timestamp", "update request", 64), "timestamp")
        rows = vectors = None
        if retrieval == "replace":
            rows = [self._row(c, f"update request.chunks[{j}]") for j, c in enumerate(self._array(req, "chunks"))]
        elif retrieval == "revector":
            vectors = [self._vector(v, f"vectors[{j}]") for j, v in enumerate(self._array(req, "vectors"))]

        key = (rtype, rid)
        rec = self.records.get(key)
        if rec is None:
            return 0
        if self._expired(rec) and "ttl" not in req:
            return 0
        if vectors is not None and len(vectors) != len(self.rows.get(key, [])):
            raise db_error(20006, f"embedding has {len(vectors)} vector(s) but the record has "
                                  f"{len(self.rows.get(key, []))} retrieval row(s); pass one vector per row")
        event_ts = ts if "timestamp" in req else self._parse_utc(rec.get("timestamp"), "timestamp")
        expires = None
        if "ttl" in req:
            expires = self._ttl_expiry(req["ttl"], self._parse_utc(rec["created_at"], "created_at"), event_ts,
                                       "update request.ttl")
        for k in ("content", "metadata", "timestamp"):
            if k in req:
                rec[k] = req[k]
        if "ttl" in req:
            rec["expires_at"] = self._utc_text(expires)
        if retrieval == "clear":
            self.rows[key] = []
        elif rows is not None:
            self.rows[key] = rows
        elif vectors is not None:
            self.rows[key] = [dict(row, vector=v) for row, v in zip(self.rows[key], vectors)]
        elif retrieval == "strip_vectors":
            self.rows[key] = [dict(row, vector=None) for row in self.rows.get(key, [])]
        return 1

    # -- the packages' small readers, with their error numbers ---------------------------
    @staticmethod
    def _string(obj: dict, key: str, where: str, max_len: int = 255) -> Optional[str]:
        """get_text: null or absent is None, a non-string -20002, too long -20001."""
        from .fakes import db_error

        val = obj.get(key)
        if val is None:
            return None
        if not isinstance(val, str):
            raise db_error(20002, f"{where}.{key} must be a string or null")
        if len(val) > max_len:
            raise db_error(20001, f"{where}.{key} is longer than {max_len} characters")
        return val

    @staticmethod
    def _record_type(value: Any, argument: str) -> str:
        """oramem_registry.check_record_type (-20003)."""
        from .fakes import db_error

        name = value.strip().lower()[:64] if isinstance(value, str) else None
        if name not in StoreStandIn.SCOPED_TYPES | {"user_profile", "agent_profile", "thread"}:
            raise db_error(20003, f"{argument} must be one of message, memory, guideline, fact, preference, "
                                  "user_profile, agent_profile, thread")
        return name  # type: ignore[return-value]

    @staticmethod
    def _array(obj: dict, key: str) -> list:
        """get_chunks: null or absent is an empty list, a non-array -20002."""
        from .fakes import db_error

        val = obj.get(key)
        if val is None:
            return []
        if not isinstance(val, list):
            raise db_error(20002, f"update request.{key} must be a JSON array")
        return val

    def _vector(self, value: Any, where: str) -> Optional[list]:
        """get_vector: null is None; not an array -20002; a store without vector_dim or another
        dimension -20006; a non-number -20002."""
        from .fakes import db_error

        if value is None:
            return None
        if not isinstance(value, list):
            raise db_error(20002, f"{where} must be a JSON array of numbers or null")
        if self.vector_dim is None:
            raise db_error(20006, f"{where}: this store has no vector_dim, so it stores no vectors; "
                                  "open it with vector_dim set (CREATE_IF_NECESSARY) first")
        if len(value) != self.vector_dim:
            raise db_error(20006, f"{where} has {len(value)} dimensions; the store's vector_dim is {self.vector_dim}")
        if any(isinstance(x, bool) or not isinstance(x, (int, float)) for x in value):
            raise db_error(20002, f"{where} must contain numbers only")
        return [float(x) for x in value]

    def _row(self, chunk: Any, where: str) -> dict:
        """collect_chunks: one retrieval row {"text", "vector"} (keyword_text is checked by
        _nested and not modelled)."""
        from .fakes import db_error

        if not isinstance(chunk, dict):
            raise db_error(20002, f"{where} must be an object {{\"text\", \"vector\"}}")
        text = chunk.get("text")
        if text is not None and not isinstance(text, str):
            raise db_error(20002, f"{where}.text must be a string or null")
        return {"text": text or "", "vector": self._vector(chunk.get("vector"), f"{where}.vector")}

    #: oramem_registry.parse_utc's pattern
    _ISO = re.compile(r"^[0-9]{4}-[0-9]{2}-[0-9]{2}[T ][0-9]{2}:[0-9]{2}:[0-9]{2}([.][0-9]{1,9})?"
                      r"(Z|[+-][0-9]{2}:?[0-9]{2})?$")

    @classmethod
    def _parse_utc(cls, text: Optional[str], argument: str) -> Optional[datetime]:
        """parse_utc: None for null, -20007 for a text that is not an ISO-8601 time (naive UTC)."""
        from .fakes import db_error

        if text is None:
            return None
        txt = text.strip()[:100]
        bad = db_error(20007, f"{argument} is not an ISO-8601 time (YYYY-MM-DDTHH:MM:SS[.ffffff][+HH:MM])")
        if not cls._ISO.match(txt):
            raise bad
        main, frac, zone = re.match(r"^(.{19})([.][0-9]+)?(.*)$", txt).groups()  # type: ignore[union-attr]
        frac = (frac or ".0")[1:7].ljust(6, "0")
        zone = "+00:00" if zone in ("", "Z") else (zone if ":" in zone else f"{zone[:3]}:{zone[3:]}")
        try:
            value = datetime.fromisoformat(f"{main.replace(' ', 'T')}.{frac}{zone}")
        except ValueError:
            raise bad from None
        return value.astimezone(timezone.utc).replace(tzinfo=None)

    @staticmethod
    def _utc_text(value: Optional[datetime]) -> Optional[str]:
        """record_json_sql's format: YYYY-MM-DDTHH24:MI:SS.FF6+00:00."""
        return None if value is None else value.strftime("%Y-%m-%dT%H:%M:%S.%f+00:00")

    @staticmethod
    def _ttl_expiry(ttl: dict, created: Optional[datetime], event_ts: Optional[datetime],
                    where: str) -> Optional[datetime]:
        """ttl_expiry after check_ttl: null days never expire; the anchor created_at or the
        record's timestamp (-20008 when it has none); past 9999-12-31 -20001; base + days."""
        from .fakes import db_error

        days = ttl.get("days")
        if days is None:
            return None
        if (ttl.get("anchor") or "created_at").lower() == "timestamp":
            if event_ts is None:
                raise db_error(20008, f"{where}: ttl anchor TIMESTAMP needs the record's timestamp; "
                                      "pass a timestamp or use the CREATED_AT anchor")
            base = event_ts
        else:
            base = created
        assert base is not None
        if days > (datetime(9999, 12, 31) - datetime(base.year, base.month, base.day, base.hour, base.minute,
                                                     base.second)).total_seconds() / 86400:
            raise db_error(20001, f"{where}.days = {days} puts the expiry after 9999-12-31; "
                                  "use fewer days, or null for a record that never expires")
        return base + timedelta(days=int(days))

    def _expired(self, rec: dict) -> bool:
        """expires_at <= now (SC-5.6; search keeps expires_at > now)."""
        exp = self._parse_utc(rec.get("expires_at"), "expires_at")
        return exp is not None and exp <= self._parse_utc(self.now, "now")  # type: ignore[operator]

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

    #: oramem_search.gc_max_k
    MAX_K = 10000

    def search(self, call: Call) -> str:
        """search_json's candidate set as the package builds it (fake40): the record types,
        expires_at > now, the scope of each dimension (:meth:`_in_scope`), the metadata filter
        (an object; null is no filter here, unlike list); then only records with a retrieval
        row (a vector for the vector leg) and a match. The ranking is the stand-in's own
        (module docstring): which records, not their scores."""
        from .fakes import db_error

        req = json.loads(_text(call.binds["in_request"]))
        if not isinstance(req, dict):
            raise db_error(20002, "search request must be a JSON object")
        self._check_keys(req, self.SEARCH_KEYS, "search request")
        self._check_embedder(req, "search request", "nothing was searched")
        strategy = req.get("strategy")
        if strategy is not None and not isinstance(strategy, str):
            raise db_error(20001, "strategy must be vector, keyword or hybrid")
        strategy = (strategy or "vector").lower()[:16]
        if strategy not in ("vector", "keyword", "hybrid") or (strategy == "vector" and self.vector_dim is None):
            raise db_error(20009, f"search strategy {strategy} is not supported by this stand-in's store")
        k = req.get("k")
        if isinstance(k, bool) or not isinstance(k, (int, float)):
            raise db_error(20001, "k is required (an integer >= 1)")
        if k < 1 or k > self.MAX_K or k != int(k):
            raise db_error(20001, f"k must be an integer between 1 and {self.MAX_K}")
        if req.get("exact") is not None and not isinstance(req["exact"], bool):
            raise db_error(20001, "exact must be true or false")
        handicap = req.get("tail_handicap", 0)
        if isinstance(handicap, bool) or not isinstance(handicap, (int, float)) or not 0 <= handicap <= 2:
            raise db_error(20001, "tail_handicap must be a number between 0 and 2")
        types = req.get("record_types")
        if types is not None:
            if not isinstance(types, list):
                raise db_error(20003, "record_types must be a list of record type names (or null for every type)")
            if any(not isinstance(t, str) for t in types):
                raise db_error(20003, "record_types must be a list of record type names")
            types = {self._record_type(t, "record_types") for t in types} or None
        scopes = [self._search_scope(req, dim) for dim in ("thread", "user", "agent")]
        rows = [r for r in self.records.values()
                if (types is None or r["record_type"] in types) and not self._expired(r)
                and all(self._in_scope(r, *scope) for scope in scopes)]
        if req.get("metadata_filter") is not None:
            rows = self._filtered(rows, req["metadata_filter"])
        text = req.get("query_text") if isinstance(req.get("query_text"), str) else None
        legs: list[dict] = []
        if strategy in ("vector", "hybrid"):
            if strategy == "hybrid" and text is None:
                raise db_error(20001, "a hybrid search needs query_text")
            if strategy == "hybrid" and req.get("hybrid") is not None:
                if not isinstance(req["hybrid"], dict):
                    raise db_error(20001, "hybrid must be a JSON object (fusion, vector_weight, keyword_weight, "
                                          "rrf_k, depth)")
                self._unknown(req["hybrid"], {"fusion", "vector_weight", "keyword_weight", "rrf_k", "depth"}, "hybrid")
            if strategy == "vector" or req.get("query_vector") is not None:
                if req.get("query_vector") is None:
                    raise db_error(20001, "a vector search needs query_vector")
                legs.append(self._vector_leg(rows, self._query_vector(req["query_vector"]), float(handicap)))
            else:
                raise db_error(20301, "the stand-in does not embed a query (oramem_search.embed_query); "
                                      "send query_vector")
        if strategy in ("keyword", "hybrid"):
            if text is None:
                raise db_error(20001, f"a {strategy} search needs query_text")
            legs.append(self._keyword_leg(rows, text))
        best: dict[tuple[str, str], float] = {}
        for leg in legs:
            for key, dist in leg.items():
                best[key] = min(dist, best.get(key, dist))
        ranked = sorted(best.items(), key=lambda kv: (round(kv[1], 12), kv[0][0].encode(), kv[0][1].encode()))
        return json.dumps([{"record": self.records[key], "distance": dist} for key, dist in ranked[:int(k)]])

    def _query_vector(self, value: Any) -> list:
        """query_vector: an array (-20002) of the store's dimension (-20006) of numbers (-20002)."""
        from .fakes import db_error

        if not isinstance(value, list):
            raise db_error(20002, "query_vector must be a JSON array of numbers")
        if len(value) != self.vector_dim:
            raise db_error(20006, f"query_vector has {len(value)} dimensions; the store's vector_dim is "
                                  f"{self.vector_dim}")
        if any(isinstance(x, bool) or not isinstance(x, (int, float)) for x in value):
            raise db_error(20002, "query_vector must contain numbers only")
        return [float(x) for x in value]

    def _vector_leg(self, rows: list, query: list, handicap: float) -> dict:
        """The cosine distance of a record's nearest row with a vector, rows after the first
        plus ``handicap``, at most 2 (vector_ranking's MIN(LEAST(2, dist + ...)))."""
        qn = math.sqrt(sum(x * x for x in query))
        out = {}
        for r in rows:
            key = (r["record_type"], r["id"])
            dists = []
            for no, row in enumerate(self.rows.get(key, [])):
                vec = row["vector"]
                if vec is None:
                    continue
                vn = math.sqrt(sum(x * x for x in vec))
                cos = sum(a * b for a, b in zip(query, vec)) / (qn * vn) if qn and vn else 0.0
                dists.append(min(2.0, 1.0 - cos + (handicap if no > 0 else 0.0)))
            if dists:
                out[key] = min(dists)
        return out

    def _keyword_leg(self, rows: list, text: str) -> dict:
        """The share of the query's words missing from a record's content and row texts
        (records that contain none are not returned); a query of no word returns nothing,
        as keyword_query's NULL."""
        words = set(re.findall(r"\w+", text.lower()))
        out = {}
        for r in rows:
            key = (r["record_type"], r["id"])
            if not self.rows.get(key):
                continue   # a keyword search reads the retrieval rows' text index
            have = set(re.findall(r"\w+", " ".join([r.get("content") or ""]
                                                     + [row["text"] for row in self.rows[key]]).lower()))
            found = len(words & have)
            if words and found:
                out[key] = 1.0 - found / len(words)
        return out

    def _search_scope(self, req: dict, dim: str) -> tuple:
        """search_json's checks of one scope member: (dim, match, value)."""
        from .fakes import db_error

        scope = req.get(dim)
        if scope is None:
            return dim, "any", None
        if not isinstance(scope, dict):
            raise db_error(20002, f'{dim} must be {{"match": ..., "value": ...}}')
        match, value = scope.get("match"), scope.get("value")
        if match is not None and not isinstance(match, str):
            raise db_error(20002, f"{dim}.match must be a string or null")
        if value is not None and not isinstance(value, str):
            raise db_error(20002, f"{dim}.value must be a string or null")
        if value is not None and len(value) > 255:
            raise db_error(20001, f"{dim}.value is longer than 255 characters")
        match = match.lower() if match is not None else None
        if match is not None and match not in ("any", "equals", "is_null"):
            raise db_error(20001, f"{dim}.match must be any, equals or is_null")
        if value is not None and (match or "any") != "equals":
            raise db_error(20002, f"{dim}.value goes with \"match\": \"equals\" only (with match "
                                  f"{match or 'absent'} it would be ignored); give \"match\": \"equals\" or "
                                  "drop the value")
        if match == "equals" and value is None:
            raise db_error(20001, f"{dim}.value is required when match is equals")
        if value is not None and not value.strip():
            raise db_error(20001, f"{dim}.value is only white space; give an id with a visible character")
        return dim, match or "any", value

    @staticmethod
    def _in_scope(rec: dict, dim: str, match: str, value: Optional[str]) -> bool:
        """oramem_filter.scope_condition (not raw), SC-6.2: a thread scope reads thread_id;
        a user scope the record id of a user_profile and user_id of every other record
        (agent likewise); is_null never keeps the dimension's own profiles."""
        if match == "any":
            return True
        if dim == "thread":
            return rec.get("thread_id") == value if match == "equals" else rec.get("thread_id") is None
        own = f"{dim}_profile"
        if match == "equals":
            return rec["id"] == value if rec["record_type"] == own else rec.get(f"{dim}_id") == value
        return rec["record_type"] != own and rec.get(f"{dim}_id") is None

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
    StoreStandIn(vector_dim=dim).install(rec.answers)
    store = OracleDBMemoryStore(HashEmbedder(dim), FakePool(rec), schema_policy=SchemaPolicy.CREATE_IF_NECESSARY,
                                memory_store_id=store_id)
    return store, rec
