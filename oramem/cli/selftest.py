"""``oramem db selftest``: what works on *this* Oracle database, one line per check.

Run by the first person with an Oracle database (and by ``tests/oracle/test_selftest_live.py``):
it creates scratch stores, one per search strategy (ids ``OMST<6 hex><V|K|H>``, unique per
run), drives every public PL/SQL entry point and every store operation through
:class:`oramem.OracleDBMemoryStore`, compares each answer with the store contract
(``STORE_CONTRACT.md``), checks with ``EXPLAIN PLAN`` / ``DBMS_XPLAN.DISPLAY`` that an
approximate vector query uses the store's HNSW index, and drops the scratch stores at the
end, also when a check (or the run) fails.

Every check ends as ``PASS``, ``FAIL`` (with the ORA- code when the database raised one and
the likely fix) or ``SKIP`` (a prerequisite is missing, e.g. Oracle Text for a KEYWORD store,
or no in-database ONNX model for HYBRID; the fix says how to get it). A SKIP is not a failure.

Embeddings: with ``model=`` (an ONNX model loaded with ``DBMS_VECTOR.LOAD_ONNX_MODEL``, see
``oramem db load-model``) every store uses :class:`OracleDBEmbedder`; without one the VECTOR
and KEYWORD stores use a 64-d :class:`HashEmbedder` and the HYBRID checks are skipped (a
HYBRID store's hybrid vector index embeds its text with an in-database model, so it needs one).

Keyword passages (issue 23): with a model, a fourth scratch store (``OMST<6 hex>P``) is a
HYBRID store whose rows a client-side embedder with a token window chunks (the engine names
the in-database model, as docs/oracle-models.md's route): a long record whose two query
words lie in different windows of one passage must come first in the keyword leg, and its
passages must be fewer than its rows (docs/store-decisions.md, "Keyword rows are passages").

The checks of store behaviour take a store factory, so the default test run executes them
against the SQLite engine (same contract) to prove that the expectations themselves are the
contract's. Static-checked, not run against Oracle.
"""

from __future__ import annotations

import functools
import json
import re
import secrets
from dataclasses import asdict, dataclass
from typing import Any, Callable, Optional

import oracledb

from ..embedders import HashEmbedder
from ..embedders.base import InputWindow
from ..batches import PendingRecordBatch
from ..types import SearchStrategy
from ..oracle.calls import PlsqlCall
from ..oracle.errors import ERROR_CLASSES, error_code

__all__ = ["CheckResult", "SelfTest", "SELFTEST_CALLS", "run_selftest", "format_results", "exit_code"]

_V, _C, _I = "VARCHAR2", "CLOB", "PLS_INTEGER"

#: The PL/SQL entry points the self-test calls directly (the JSON ones the driver calls are
#: exercised through the store). Checked against plsql/*.pks by tests/plsql.
SELFTEST_CALLS: dict[str, PlsqlCall] = {
    "capabilities": PlsqlCall("oramem_admin", "capabilities", (), _C),
    "list_stores": PlsqlCall("oramem_admin", "list_stores", (), _C),
    "describe_store": PlsqlCall("oramem_admin", "describe_store", (("in_store_id", _V),), _C),
    "create_store": PlsqlCall("oramem_admin", "create_store", (("in_settings", _C),), _C),
    "open_store": PlsqlCall("oramem_admin", "open_store", (("in_settings", _C), ("in_policy", _V)), _C),
    "upgrade_store": PlsqlCall("oramem_admin", "upgrade_store", (("in_store_id", _V),), _C),
    "set_deletion_hook": PlsqlCall("oramem_admin", "set_deletion_hook",
                                   (("in_store_id", _V), ("in_procedure_name", _V))),
    "drop_store": PlsqlCall("oramem_admin", "drop_store", (("in_store_id", _V), ("in_if_exists", _I))),
    "delete_record": PlsqlCall("oramem_store", "delete_record",
                               (("in_store_id", _V), ("in_record_type", _V), ("in_record_id", _V),
                                ("in_cascade", _I)), _I),
    "delete_thread": PlsqlCall("oramem_store", "delete_thread", (("in_store_id", _V), ("in_thread_id", _V)), _I),
    "purge_expired": PlsqlCall("oramem_store", "purge_expired", (("in_store_id", _V),), _I),
    "run_purge_job": PlsqlCall("oramem_store", "run_purge_job", (("in_store_id", _V),)),
    "keyword_query": PlsqlCall("oramem_search", "keyword_query", (("in_text", _V),), _V),
    "check_embedder": PlsqlCall("oramem_admin", "check_embedder",
                                (("in_store_id", _V), ("in_identity", _C), ("in_what", _V))),
    "export": PlsqlCall("oramem_store", "export_json",
                        (("in_store_id", _V), ("in_after_seq", "NUMBER"), ("in_limit", _I)), _C),
}

SCRATCH_PREFIX = "OMST"
_SCRATCH_ID = re.compile(r"^OMST[0-9A-F]{6}[VKHP]$")
_ORA = re.compile(r"\bORA-(\d{5})\b")
_HNSW_OP = "VECTOR INDEX HNSW SCAN"
_PAST = "2000-01-01T00:00:00+00:00"
#: the scratch stores, in run order
STRATEGIES = (SearchStrategy.VECTOR, SearchStrategy.KEYWORD, SearchStrategy.HYBRID)
_CONTRACT_FIX = ("the database answered against the store contract: run `oramem db upgrade` if the packages "
                 "are older than this oramem, otherwise report this line")


@dataclass
class CheckResult:
    name: str
    status: str  # PASS | FAIL | SKIP
    detail: str = ""
    ora: Optional[str] = None
    fix: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class ContractMismatch(AssertionError):
    """An answer that differs from the contract (not a database error)."""


class _Skip(Exception):
    def __init__(self, detail: str, fix: str = "") -> None:
        super().__init__(detail)
        self.detail, self.fix = detail, fix


def expect(cond: bool, message: str) -> None:
    if not cond:
        raise ContractMismatch(message)


def ora_code(exc: BaseException) -> Optional[int]:
    """The ORA- code behind ``exc``: python-oracledb's ``error.code``, an oramem exception's
    ``oracle_code``, its ``__cause__`` chain, or the first ``ORA-nnnnn`` in the message."""
    seen: set[int] = set()
    e: Optional[BaseException] = exc
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        code = error_code(e)
        if code is None and isinstance(getattr(e, "oracle_code", None), int):
            code = e.oracle_code  # type: ignore[attr-defined]
        if code is not None:
            return code
        e = e.__cause__ or e.__context__
    m = _ORA.search(str(exc))
    return int(m.group(1)) if m else None


def _fix_for(exc: BaseException, code: Optional[int]) -> str:
    if isinstance(exc, ContractMismatch):
        return _CONTRACT_FIX
    if code is not None and code in ERROR_CLASSES:
        return ERROR_CLASSES[code][1]
    if code is not None:
        return f"look up ORA-{code:05d} in the Oracle error reference; `oramem db doctor` checks the prerequisites"
    return "a client-side error: check the oramem and python-oracledb versions (`oramem db status`)"


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"


def _refused(conn: Any, call: PlsqlCall, code: int, what: str, **values: Any) -> None:
    """Run a call the contract says fails with ORA-<code>: that error passes, any other
    propagates, none at all is a :class:`ContractMismatch` naming ``what``."""
    try:
        _call(conn, call, **values)
    except Exception as e:
        if ora_code(e) == code:
            return
        raise
    raise ContractMismatch(f"{what} did not raise ORA-{code}")


def _call(conn: Any, call: PlsqlCall, **values: Any) -> Any:
    """One direct PL/SQL call with named parameters (the DBA tooling's call path; an
    oramem error keeps its ORA- code as ``oracle_code``)."""
    from ..oracle.admin import call_plsql as admin_call

    return admin_call(conn, call, **values)


def _ids(records: Any) -> list[str]:
    return [r.id for r in records]


def _hit_ids(hits: Any) -> list[str]:
    return [r.id for r, _ in hits]


#: the keyword-passage check's words: both in the first 2,000 characters of the long record
#: (one passage), in different token windows (the first window is 128 tokens)
PASSAGE_WORDS = ("zanzibar", "quokka")


def passage_records() -> tuple[list[str], list[str]]:
    """The keyword-passage check's records (texts, ids): ``st-whole``, a long record holding
    both :data:`PASSAGE_WORDS` in one passage but in different windows; ``st-one`` and
    ``st-two``, texts of its passage's length holding one word each; ten unrelated notes (so
    that the words are rare: bm25 floors a word held by half the rows). Ranked by windows,
    every record's best row holds one word and the tie goes to ``st-one`` (ids in binary
    order, SC-6.1); ranked by passages, ``st-whole`` holds both and comes first."""
    whole = [f"f{i}" for i in range(600)]
    whole.insert(200, PASSAGE_WORDS[1])
    whole.insert(20, PASSAGE_WORDS[0])
    one = [f"g{i}" for i in range(300)]
    one.insert(150, PASSAGE_WORDS[0])
    two = [f"h{i}" for i in range(300)]
    two.insert(150, PASSAGE_WORDS[1])
    others = [f"an unrelated note number {i} about the weather" for i in range(10)]
    return ([" ".join(whole), " ".join(one), " ".join(two), *others],
            ["st-whole", "st-one", "st-two", *(f"st-x{i}" for i in range(10))])


class PassageEmbedder(HashEmbedder):
    """A client-side embedder with a token window (one token per whitespace word), as
    ``ONNXEmbedder`` reports one: its store chunks by tokens and so groups keyword passages.
    Its vectors are :class:`HashEmbedder`'s of ``dim`` dimensions (the check ranks keywords)."""

    input_window = InputWindow(max_tokens=254, spans=lambda t: [m.span() for m in re.finditer(r"\S+", t)],
                               tokenizer="whitespace")


def _supported(strategy: SearchStrategy) -> list[SearchStrategy]:
    """SC-6.6: what a store of ``strategy`` can answer."""
    if strategy is SearchStrategy.HYBRID:
        return [SearchStrategy.VECTOR, SearchStrategy.KEYWORD, SearchStrategy.HYBRID]
    return [strategy]


class SelfTest:
    """One self-test run. ``conn`` is a sync python-oracledb connection to the schema that
    owns oramem; ``store_factory(strategy, store_id)`` opens a scratch store (default: an
    :class:`OracleDBMemoryStore` on ``conn`` with ``CREATE_IF_NECESSARY``)."""

    def __init__(self, conn: Any, *, model: Optional[str] = None, dim: int = 64,
                 store_factory: Optional[Callable[[SearchStrategy, str], Any]] = None,
                 echo: Optional[Callable[[CheckResult], None]] = None, run_id: Optional[str] = None,
                 passage_factory: Optional[Callable[[str], Any]] = None) -> None:
        if model is not None:
            from ..oracle.embedder import validate_model_name

            model = validate_model_name(model)
        self.conn, self.model, self.dim = conn, model, dim
        self.store_factory = store_factory or self._oracle_store
        #: opens the keyword-passage store (issue 23); a custom store_factory without one
        #: skips that check
        self.passage_factory = passage_factory or (self._oracle_passage_store if store_factory is None else None)
        self.echo = echo
        self.run_id = (run_id or secrets.token_hex(3)).upper()
        if not re.fullmatch(r"[0-9A-F]{6}", self.run_id):
            raise ValueError("run_id must be 6 hexadecimal digits")
        self.results: list[CheckResult] = []
        self.created: list[str] = []
        self.caps: dict[str, Any] = {}

    # -- plumbing ----------------------------------------------------------------------
    def store_id(self, strategy: SearchStrategy) -> str:
        return f"{SCRATCH_PREFIX}{self.run_id}{strategy.value[0].upper()}"

    @property
    def passage_store_id(self) -> str:
        """The keyword-passage check's scratch store (issue 23)."""
        return f"{SCRATCH_PREFIX}{self.run_id}P"

    def _oracle_store(self, strategy: SearchStrategy, store_id: str) -> Any:
        from ..embedders import HashEmbedder
        from ..store import OracleDBMemoryStore
        from ..oracle.embedder import OracleDBEmbedder

        if self.model is not None:
            embedder: Any = OracleDBEmbedder(self.conn, self.model)
        elif strategy is SearchStrategy.HYBRID:
            raise _Skip("no in-database ONNX model given (a HYBRID store's hybrid vector index embeds its text with one)",
                        "load one with `oramem db load-model FILE --name NAME`, then rerun with --model NAME")
        else:
            embedder = HashEmbedder(self.dim)
        return OracleDBMemoryStore(embedder, self.conn, schema_policy="CREATE_IF_NECESSARY",
                                   memory_store_id=store_id, search_strategy=strategy)

    def _oracle_passage_store(self, store_id: str) -> Any:
        from ..oracle.embedder import OracleDBEmbedder
        from ..oracle.sync_engine import SyncOracleEngine
        from ..store import OracleMemoryStore

        if self.model is None:
            raise _Skip("no in-database ONNX model given (a HYBRID store's hybrid vector index embeds its text with one)",
                        "load one with `oramem db load-model FILE --name NAME`, then rerun with --model NAME")
        dim = OracleDBEmbedder(self.conn, self.model).embedding_dimension
        return OracleMemoryStore(SyncOracleEngine(self.conn, embedding_model=self.model),
                                 embedder=PassageEmbedder(dim), schema_policy="CREATE_IF_NECESSARY",
                                 memory_store_id=store_id, search_strategy=SearchStrategy.HYBRID)

    def _record(self, result: CheckResult) -> CheckResult:
        self.results.append(result)
        if self.echo is not None:
            self.echo(result)
        return result

    def check(self, name: str, fn: Callable[[], Optional[str]]) -> CheckResult:
        """Run one check: ``fn`` returns a detail string (PASS), raises ``_Skip`` (SKIP),
        :class:`ContractMismatch` or any error (FAIL)."""
        try:
            detail = fn() or ""
        except _Skip as s:
            return self._record(CheckResult(name, "SKIP", s.detail, None, s.fix))
        except Exception as e:  # every failure becomes a line, never a traceback
            code = ora_code(e)
            return self._record(CheckResult(name, "FAIL", _first_line(e),
                                            f"ORA-{code:05d}" if code is not None else None, _fix_for(e, code)))
        return self._record(CheckResult(name, "PASS", detail))

    def skip(self, name: str, detail: str, fix: str = "") -> None:
        self._record(CheckResult(name, "SKIP", detail, None, fix))

    # -- the run -----------------------------------------------------------------------
    def run(self) -> list[CheckResult]:
        try:
            self.check("oramem_admin.capabilities", self._capabilities)
            stores: dict[SearchStrategy, Any] = {}
            for strategy in STRATEGIES:
                store = self._open(strategy)
                if store is not None:
                    stores[strategy] = store
                    self._store_checks(strategy, store)
            self._plsql_checks(stores)
            self._passage_check()
            for strategy in stores:
                if strategy is not SearchStrategy.KEYWORD:
                    self.check(f"{strategy.value}: EXPLAIN PLAN uses the HNSW index",
                               functools.partial(self._plan, strategy))
        finally:
            self._cleanup()
        return self.results

    def _passage_check(self) -> None:
        """Issue 23: the keyword leg of a HYBRID store that chunks by tokens ranks passages."""
        name = "hybrid (token windows): keyword leg ranks passages"
        if self.passage_factory is None:
            self.skip(name, "no keyword-passage store factory", "run against Oracle with --model NAME")
            return
        if self.caps.get("oracle_text") is False or self.caps.get("hybrid_vector") is False:
            self.skip(name, "HYBRID search is not available here", "see the hybrid lines above")
            return
        sid = self.passage_store_id
        factory = self.passage_factory

        def do() -> str:
            self.created.append(sid)   # before the call: a half-created store is dropped too
            store = factory(sid)
            texts, ids = passage_records()
            expect(store.add(texts, "memory", record_ids=ids) == ids, "add returned other ids")
            hits = _hit_ids(store.search(" ".join(PASSAGE_WORDS), k=3, strategy=SearchStrategy.KEYWORD))
            expect(hits[:1] == ["st-whole"],
                   f"keyword search {' '.join(PASSAGE_WORDS)!r}: {hits}, expected st-whole first (its two "
                   "words lie in one passage; ranked by windows, no record holds both)")
            counts = self._passage_counts(store, sid)
            if counts is None:
                return "st-whole first"
            rows, passages = counts
            expect(0 < passages < rows, f"st-whole has {rows} retrieval rows and {passages} keyword "
                                        "passages, expected fewer passages than rows")
            return f"st-whole first; {rows} rows, {passages} passages"

        result = self.check(name, do)
        if result.status == "SKIP":
            self.created.remove(sid)

    def _passage_counts(self, store: Any, sid: str) -> Optional[tuple[int, int]]:
        """st-whole's retrieval rows and keyword passages in the Oracle store's tables (None
        for another engine's store)."""
        from ..oracle.base import OracleEngine

        if not isinstance(getattr(store, "engine", None), OracleEngine) or not _SCRATCH_ID.match(sid):
            return None
        with self.conn.cursor() as cur:   # only our generated, validated store id in the text
            cur.execute(f'SELECT COUNT(*) FROM "OM_{sid}_CHK" WHERE record_id = :i', i="st-whole")
            rows = int(cur.fetchone()[0])
            cur.execute(f'SELECT COUNT(*) FROM "OM_{sid}_KWP" WHERE record_id = :i', i="st-whole")
            passages = int(cur.fetchone()[0])
        return rows, passages

    def _capabilities(self) -> str:
        caps = json.loads(_call(self.conn, SELFTEST_CALLS["capabilities"]) or "null")
        expect(isinstance(caps, dict), f"capabilities returned {caps!r}, not a JSON object")
        for key in ("oracle_text", "hybrid_vector", "code_schema_version"):
            expect(key in caps, f"capabilities has no {key!r} key: {sorted(caps)}")
        self.caps = caps
        return ", ".join(f"{k}={caps[k]}" for k in sorted(caps))

    def _open(self, strategy: SearchStrategy) -> Any:
        name = f"{strategy.value}: open (create) store"
        sid = self.store_id(strategy)
        if strategy is not SearchStrategy.VECTOR and self.caps.get("oracle_text") is False:
            self.skip(name, "Oracle Text is not available", "install Oracle Text and GRANT EXECUTE ON CTXSYS.CTX_DDL "
                                                            "(see `oramem db doctor`)")
            return None
        if strategy is SearchStrategy.HYBRID and self.caps.get("hybrid_vector") is False:
            self.skip(name, "DBMS_HYBRID_VECTOR is not available", "HYBRID needs Oracle AI Database 23.6 or later")
            return None
        holder: dict[str, Any] = {}

        def do() -> str:
            self.created.append(sid)  # before the call: a half-created store is dropped too
            store = self.store_factory(strategy, sid)
            got = store.settings
            expect(got.memory_store_id.upper() == sid, f"opened {got.memory_store_id!r}, asked for {sid!r}")
            expect(got.search_strategy is strategy, f"strategy {got.search_strategy}, asked for {strategy}")
            holder["store"] = store
            return f"{sid} (vector_dim={got.vector_dim})"

        result = self.check(name, do)
        if result.status == "SKIP":
            self.created.remove(sid)
        return holder.get("store")

    # -- store operations (the contract) ---------------------------------------------------
    def _store_checks(self, strategy: SearchStrategy, s: Any) -> None:
        p = strategy.value
        msgs = ["I drink green tea every morning", "My dog is called Rex", "We booked a flight to Lisbon"]
        mids = ["st-m1", "st-m2", "st-m3"]
        times = ["2026-01-01T10:00:00+00:00", "2026-01-01T10:01:00+00:00", "2026-01-01T10:02:00+00:00"]

        def add() -> str:
            ids = s.add(msgs, "message", record_ids=mids, thread_ids="st-t1", user_ids="st-u1",
                        agent_ids="st-a1", roles=["user", "assistant", "user"], timestamps=times)
            expect(ids == mids, f"add returned {ids}, expected {mids} (SC-4.1: ids in input order)")
            ids = s.add(["Alice prefers green tea with lemon", "Alice plans a trip to Lisbon"], "memory",
                        record_ids=["st-mem1", "st-mem2"], user_ids=["st-u1", "st-u2"],
                        metadata=[{"topic": "food", "n": 3}, {"topic": "travel", "n": 5}])
            expect(ids == ["st-mem1", "st-mem2"], f"add returned {ids}")
            ids = s.add(["an expired note about green tea", "another expired note about green tea"], "memory",
                        record_ids=["st-exp1", "st-exp2"], user_ids="st-u1", timestamps=_PAST,
                        ttl_days=1, ttl_anchor="timestamp")
            expect(ids == ["st-exp1", "st-exp2"], f"add returned {ids}")
            return "8 records in 3 calls"

        def add_batches() -> str:
            ids = s.add_batches([
                PendingRecordBatch(texts=["Alice is allergic to peanuts", "Alice works night shifts"],
                                   record_type="fact", record_ids=["st-f1", "st-f2"], user_ids="st-u1"),
                PendingRecordBatch(texts=["Answer in short sentences"], record_type="guideline",
                                   record_ids=["st-g1"], agent_ids="st-a1"),
            ])
            expect(ids == ["st-f1", "st-f2", "st-g1"], f"add_batches returned {ids}, expected the batch order")
            return "2 batches, 3 records"

        def get() -> str:
            r = s.get("memory", "st-mem1")
            expect(r is not None, "get of a stored memory returned None")
            expect(r.content == "Alice prefers green tea with lemon", f"content {r.content!r}")
            expect(r.metadata == {"topic": "food", "n": 3}, f"metadata {r.metadata!r}")
            expect(r.user_id == "st-u1", f"user_id {r.user_id!r}")
            m = s.get("message", "st-m2")
            expect(m is not None and m.thread_id == "st-t1" and m.role == "assistant",
                   f"message st-m2 came back as {m!r}")
            expect(s.get("memory", "st-missing") is None, "get of an unknown id did not return None (SC-3.2)")
            return "content, metadata, scope, role; unknown id -> None"

        def list_() -> str:
            got = _ids(s.list("memory", user_id="st-u1"))
            expect(got == ["st-mem1"], f"list(memory, user_id=st-u1) = {got}, expected [st-mem1] "
                                       "(expired st-exp1/2 must be invisible, SC-5.4)")
            got = _ids(s.list("memory", metadata_filter={"topic": "travel"}))
            expect(got == ["st-mem2"], f"list(metadata_filter topic=travel) = {got}")
            got = _ids(s.list("memory", metadata_filter={"n": {"$gte": 4}}))
            expect(got == ["st-mem2"], f"list(metadata_filter n >= 4) = {got}")
            got = _ids(s.list("message", limit=2))
            expect(got == ["st-m2", "st-m3"], f"list(message, limit=2) = {got}, expected the newest 2 oldest first")
            return "user scope, metadata equality and $gte, limit"

        def thread_messages() -> str:
            got = _ids(s.list_thread_messages("st-t1"))
            expect(got == mids, f"list_thread_messages = {got}, expected {mids}")
            got = _ids(s.list_thread_messages("st-t1", last_n=2))
            expect(got == mids[1:], f"last_n=2 gave {got}")
            return "oldest first; last_n"

        def update() -> str:
            n = s.update("memory", "st-mem1", text="Alice prefers jasmine green tea with lemon",
                         metadata={"topic": "food", "n": 4})
            expect(n == 1, f"update of a stored record returned {n}, expected 1")
            r = s.get("memory", "st-mem1")
            expect(r is not None and r.content == "Alice prefers jasmine green tea with lemon",
                   f"after update: {r and r.content!r}")
            expect(r.metadata == {"topic": "food", "n": 4}, f"metadata after update {r.metadata!r}")
            n = s.update("memory", "st-missing", text="x")
            expect(n == 0, f"update of an unknown record returned {n}, expected 0 (SC-7.1)")
            return "text and metadata; unknown id -> 0"

        def ttl() -> str:
            expect(s.get("memory", "st-exp1") is None, "an expired record is visible to get (SC-5.4)")
            return "expired records invisible to get and list"

        for label, fn in (("add", add), ("add_batches", add_batches), ("get", get), ("list", list_),
                          ("list_thread_messages", thread_messages), ("update", update), ("TTL expiry", ttl),
                          ("sync_search_index", lambda: s.sync_search_index() or "index in sync")):
            self.check(f"{p}: {label}", fn)
        for st in _supported(strategy):
            self._search_checks(p, s, st)
        self._delete_checks(p, s)

    def _search_checks(self, p: str, s: Any, st: SearchStrategy) -> None:
        q = f"{p}: search {st.value}"

        def ordered(hits: Any, k: int) -> None:
            expect(len(hits) <= k, f"{len(hits)} hits for k={k}")
            d = [dist for _, dist in hits]
            expect(all(type(x) is float for x in d), f"distances are not floats: {d} (SC-6.7)")
            expect(d == sorted(d), f"distances not ascending: {d} (SC-6.1)")
            ids = _hit_ids(hits)
            expect(len(ids) == len(set(ids)), f"a record came back twice: {ids}")

        def scope() -> str:
            hits = s.search("green tea", k=3, thread_id="st-t1", strategy=st)
            ordered(hits, 3)
            expect(hits and hits[0][0].id == "st-m1", f"thread-scoped 'green tea': {_hit_ids(hits)}, expected st-m1 first")
            expect(all(r.thread_id == "st-t1" for r, _ in hits), f"hits outside thread st-t1: {_hit_ids(hits)}")
            hits = s.search("green tea", k=5, user_id="st-u2", record_types=["memory"], strategy=st)
            expect(all(r.user_id == "st-u2" and r.record_type == "memory" for r, _ in hits),
                   f"user st-u2 / memory scope leaked: {_hit_ids(hits)}")
            return "thread scope ranks st-m1 first; user scope + record_types hold"

        def metadata() -> str:
            hits = s.search("green tea", k=5, record_types=["memory"], metadata_filter={"topic": "food"}, strategy=st)
            ordered(hits, 5)
            expect(_hit_ids(hits) == ["st-mem1"], f"metadata_filter topic=food: {_hit_ids(hits)}, expected [st-mem1]")
            return "filter applied before top-k"

        def expired() -> str:
            hits = s.search("expired note about green tea", k=10, strategy=st)
            leaked = {"st-exp1", "st-exp2"} & set(_hit_ids(hits))
            expect(not leaked, f"expired records returned by search: {sorted(leaked)} (SC-5.4)")
            return "expired records invisible"

        def stemming() -> str:
            # keyword_language english (a new store's default on both engines): "peanut"
            # finds "peanuts" (porter on SQLite, Oracle Text's English stems on Oracle)
            hits = s.search("peanut", k=5, strategy=st)
            expect("st-f1" in _hit_ids(hits), f"'peanut' found {_hit_ids(hits)}, expected st-f1 ('... peanuts')")
            return "peanut -> peanuts"

        checks: list[tuple[str, Callable[[], str]]] = [("scope", scope), ("metadata filter", metadata),
                                                       ("TTL", expired)]
        if st is SearchStrategy.KEYWORD:
            checks.append(("stemming", stemming))
        for label, fn in checks:
            self.check(f"{q} ({label})", fn)

    def _delete_checks(self, p: str, s: Any) -> None:
        def delete() -> str:
            expect(s.delete("fact", "st-f2") == 1, "delete of a stored fact did not return 1")
            expect(s.get("fact", "st-f2") is None, "the deleted fact is still visible")
            expect(s.delete("fact", "st-f2") == 0, "a second delete did not return 0 (SC-8.1)")
            return "1, then 0"

        def cascade() -> str:
            s.add_user("st-u9", "Bob likes chess")
            s.add(["Bob says hi"], "message", record_ids=["st-m9"], thread_ids="st-t9", user_ids="st-u9")
            s.add(["Bob plays on Sundays"], "memory", record_ids=["st-mem9"], user_ids="st-u9")
            n = s.delete("user_profile", "st-u9", cascade=True)
            expect(n == 1, f"cascade delete returned {n}, expected 1")
            left = [x for x in (s.get("user_profile", "st-u9"), s.get("message", "st-m9"),
                                s.get("memory", "st-mem9")) if x is not None]
            expect(not left, f"cascade left {[(r.record_type, r.id) for r in left]} (SC-8.2)")
            expect(s.list_thread_messages("st-t9") == [], "the user's thread still has messages")
            return "profile, thread, messages and user-scoped records removed"

        def delete_thread() -> str:
            n = s.delete_thread("st-t1")
            expect(n == 1, f"delete_thread returned {n}, expected 1")
            expect(s.list_thread_messages("st-t1") == [], "messages survive delete_thread (SC-8.3)")
            expect(s.delete_thread("st-t1") == 0, "a second delete_thread did not return 0")
            return "1, then 0"

        def purge() -> str:
            n = s.purge_expired()
            expect(n >= 2, f"purge_expired removed {n} rows, expected the 2 expired records (SC-5.5)")
            expect(s.purge_expired() == 0, "a second purge_expired removed rows")
            return f"{n} removed, then 0"

        for label, fn in (("delete", delete), ("delete cascade", cascade), ("delete_thread", delete_thread),
                          ("purge_expired", purge)):
            self.check(f"{p}: {label}", fn)

    # -- PL/SQL entry points called directly ---------------------------------------------
    def _plsql_checks(self, stores: dict[SearchStrategy, Any]) -> None:
        c, conn = SELFTEST_CALLS, self.conn
        if not stores:
            self.skip("PL/SQL entry points", "no scratch store could be opened", "see the open lines above")
            return
        sid = self.store_id(next(iter(stores)))

        def list_stores() -> str:
            ids = {str(x.get("memory_store_id", "")).upper() for x in json.loads(_call(conn, c["list_stores"]) or "[]")}
            missing = {self.store_id(st) for st in stores} - ids
            expect(not missing, f"list_stores does not show {sorted(missing)}")
            return f"{len(ids)} store(s), scratch stores listed"

        def describe() -> str:
            d = json.loads(_call(conn, c["describe_store"], in_store_id=sid) or "null")
            expect(isinstance(d, dict) and str(d.get("memory_store_id", "")).upper() == sid, f"describe_store: {d!r}")
            expect(d.get("keyword_language") == "english",
                   f"describe_store keyword_language={d.get('keyword_language')!r}, expected 'english' (a new store)")
            return f"state={d.get('state')}, keyword_language={d.get('keyword_language')}"

        def language_mismatch() -> str:
            _refused(conn, c["open_store"], 20103, "open_store with another keyword_language",
                     in_settings=json.dumps({"memory_store_id": sid, "keyword_language": "none"}),
                     in_policy="REQUIRE_EXISTING")
            return "ORA-20103 as documented"

        def create_existing() -> str:
            _refused(conn, c["create_store"], 20102, "create_store of an existing store",
                     in_settings=json.dumps({"memory_store_id": sid}))
            return "ORA-20102 as documented"

        def upgrade() -> str:
            d = json.loads(_call(conn, c["upgrade_store"], in_store_id=sid) or "null")
            expect(isinstance(d, dict) and d.get("upgraded") is False,
                   f"upgrade_store of a current store: {d!r}, expected \"upgraded\": false")
            return "current store left unchanged"

        def hook() -> str:
            _call(conn, c["set_deletion_hook"], in_store_id=sid, in_procedure_name=None)
            return "cleared"

        def kq() -> str:
            # english (the default): stopwords dropped, the stem operator on each plain word
            out = _call(conn, c["keyword_query"], in_text="what about green tea")
            expect(out == "$green ACCUM $tea",
                   f"keyword_query('what about green tea') = {out!r}, expected $green ACCUM $tea")
            return out

        def counts() -> str:
            n1 = _call(conn, c["delete_record"], in_store_id=sid, in_record_type="memory",
                       in_record_id="st-missing", in_cascade=0)
            n2 = _call(conn, c["delete_thread"], in_store_id=sid, in_thread_id="st-missing")
            n3 = _call(conn, c["purge_expired"], in_store_id=sid)
            conn.rollback()
            expect((n1, n2, n3) == (0, 0, 0), f"on nothing to remove: delete_record={n1}, delete_thread={n2}, "
                                              f"purge_expired={n3}; expected 0, 0, 0")
            return "0, 0, 0"

        def purge_job() -> str:
            _call(conn, c["run_purge_job"], in_store_id=sid)
            return "ran"

        def embedder() -> str:
            # ora44: the store's own identity passes; another is -20108 (what add_json,
            # update_json and search_json run when a request names its embedder)
            d = json.loads(_call(conn, c["describe_store"], in_store_id=sid) or "{}")
            recorded = d.get("embedder") if isinstance(d, dict) else None
            other = {"kind": "selftest", "name": "not-this-store's-embedder"}
            _call(conn, c["check_embedder"], in_store_id=sid, in_identity=json.dumps(recorded or other),
                  in_what="nothing was checked")
            if recorded is None:
                return "no embedder recorded: nothing to compare"
            _refused(conn, c["check_embedder"], 20108, "check_embedder with another embedder than the recorded one",
                     in_store_id=sid, in_identity=json.dumps(other), in_what="nothing was checked")
            return "the recorded identity passes; another -> ORA-20108"

        def export() -> str:
            # what oramem migrate reads: pages of {"record", "chunks"} in seq order
            page = json.loads(_call(conn, c["export"], in_store_id=sid, in_after_seq=0, in_limit=2) or "null")
            expect(isinstance(page, list) and len(page) <= 2, f"export_json(limit 2) returned {page!r}")
            seqs = [p["record"]["seq_no"] for p in page]
            expect(seqs == sorted(seqs), f"export_json pages are not in seq order: {seqs}")
            for p in page:
                chunks = p.get("chunks") or []
                expect(all(isinstance(ch.get("text"), str) for ch in chunks), f"export_json chunks: {chunks!r}")
            _refused(conn, c["export"], 20001, "export_json with limit 0", in_store_id=sid, in_after_seq=0, in_limit=0)
            return f"{len(page)} record(s) in a page of 2; limit 0 -> ORA-20001"

        for label, fn in (("oramem_admin.list_stores", list_stores), ("oramem_admin.describe_store", describe),
                          ("oramem_admin.create_store (existing store)", create_existing),
                          ("oramem_admin.open_store (another keyword_language)", language_mismatch),
                          ("oramem_admin.upgrade_store", upgrade), ("oramem_admin.set_deletion_hook", hook),
                          ("oramem_search.keyword_query", kq),
                          ("oramem_store.delete_record / delete_thread / purge_expired", counts),
                          ("oramem_store.run_purge_job", purge_job), ("oramem_store.export_json", export),
                          ("oramem_admin.check_embedder", embedder)):
            self.check(label, fn)

    # -- EXPLAIN PLAN ----------------------------------------------------------------------
    def plan_sql(self, strategy: SearchStrategy, dim: int) -> tuple[str, str, str]:
        """The EXPLAIN PLAN statement (statement id, SQL, the ``:v`` vector text) of the
        approximate query shape oramem_search runs. Only our generated, validated store id and
        numbers go in the text. D6: the vector is a bind (a literal over 4000 characters, from
        1000 dimensions on, is ORA-01704), and the VECTOR_INDEX_SCAN hint ("the optimizer does
        not consider a full table scan", AI Vector Search User's Guide 23, Vector Index Hints)
        makes the check ask whether the index is usable, not whether the cost-based optimizer
        prefers it on a scratch table of a few rows."""
        sid = self.store_id(strategy)
        if not _SCRATCH_ID.match(sid):  # pragma: no cover - guarded by the constructor
            raise ValueError(sid)
        vec = "[" + ",".join(["0.1"] * dim) + "]"
        stmt = f"ORAMEM_ST_{sid}"
        sql = (f"EXPLAIN PLAN SET STATEMENT_ID = '{stmt}' FOR "
               f'SELECT /*+ VECTOR_INDEX_SCAN(c) */ c.record_type, c.record_id FROM "OM_{sid}_CHK" c '
               f"ORDER BY VECTOR_DISTANCE(c.embedding, TO_VECTOR(:v, {dim}, FLOAT32), COSINE) "
               "FETCH APPROX FIRST 10 ROWS ONLY WITH TARGET ACCURACY 95")
        return stmt, sql, vec

    def _plan(self, strategy: SearchStrategy) -> str:
        d = json.loads(_call(self.conn, SELFTEST_CALLS["describe_store"], in_store_id=self.store_id(strategy)) or "{}")
        dim = d.get("vector_dim")
        if not isinstance(dim, int) or dim < 1:
            raise _Skip(f"the store has no vector_dim ({dim!r})")
        stmt, sql, vec = self.plan_sql(strategy, dim)
        with self.conn.cursor() as cur:
            cur.setinputsizes(v=oracledb.DB_TYPE_CLOB)
            cur.execute(sql, v=vec)
            cur.execute("select plan_table_output from table(dbms_xplan.display('PLAN_TABLE', :stmt, 'BASIC'))",
                        stmt=stmt)
            lines = [r[0] for r in cur.fetchall() if r and r[0]]
            cur.execute("delete from plan_table where statement_id = :stmt", stmt=stmt)
        self.conn.commit()
        hnsw = [ln for ln in lines if _HNSW_OP in ln.upper()]
        if not hnsw:
            ops = [re.sub(r"\s+", " ", ln.strip("| ")) for ln in lines if "|" in ln][2:8]
            raise ContractMismatch(
                f"no {_HNSW_OP} in the plan ({'; '.join(ops) or 'empty plan'}): approximate search is a full scan. "
                f"Check VECTOR_MEMORY_SIZE > 0 and that index OM_{self.store_id(strategy)}_HNSW exists "
                "(`oramem db doctor`, USER_INDEXES)")
        return re.sub(r"\s+", " ", hnsw[0].strip("| "))

    # -- cleanup ---------------------------------------------------------------------------
    def _cleanup(self) -> None:
        for sid in list(self.created):
            def drop(sid: str = sid) -> str:
                try:
                    self.conn.rollback()  # a failed check may have left a transaction open
                except Exception:
                    pass
                _call(self.conn, SELFTEST_CALLS["drop_store"], in_store_id=sid, in_if_exists=1)
                return "dropped"

            if self.check(f"cleanup: oramem_admin.drop_store {sid}", drop).status == "PASS":
                self.created.remove(sid)


def run_selftest(conn: Any, **kwargs: Any) -> list[CheckResult]:
    return SelfTest(conn, **kwargs).run()


def format_result(r: CheckResult) -> str:
    line = f"{r.status:<4}  {r.name}" + (f": {r.detail}" if r.detail else "")
    if r.ora:
        line += f" [{r.ora}]"
    if r.status != "PASS" and r.fix:
        line += f"\n      fix: {r.fix}"
    return line


def format_results(results: list[CheckResult]) -> str:
    return "\n".join(format_result(r) for r in results)


def exit_code(results: list[CheckResult]) -> int:
    """1 when any check failed, else 0 (SKIP is not a failure)."""
    return 1 if any(r.status == "FAIL" for r in results) else 0
