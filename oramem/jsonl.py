"""Backups as JSON Lines: :func:`export_records` writes every record of a store, one JSON
object per line; :func:`import_records` restores them (``oramem export`` / ``oramem import``
are thin wrappers around these).

A line carries the fields of ``add`` (``record_type``, ``content``, ``id``, ``thread_id``,
``user_id``, ``agent_id``, ``role``, ``timestamp``, ``metadata``, ``ttl_days``,
``ttl_anchor``, ``index_text``, ``embedding``) plus ``created_at`` and ``expires_at``, which
an import keeps by default (``keep_times=False`` assigns them afresh as ``add`` does).
``seq_no`` is written for reference and ignored: the store numbers messages itself, in
import order (export writes them oldest first).

A ``thread`` line keeps a thread row as it was (id, who opened it, ``created_at``; SC-13.6):
an import writes the thread lines before the records, so the records do not re-create their
threads with another opener. A knowledge line ``{"kg_table": NAME, "row": {...}}`` carries
one row of the store's knowledge tables (:func:`export_knowledge` / :func:`import_knowledge`,
table-agnostic: the columns come from ``oramem.knowledge.db.schema``).

Limits (finding 18): a line is at most :data:`MAX_LINE_CHARS` characters and nests at most
:data:`MAX_DEPTH` levels, and its strings are Unicode text (no lone surrogate escapes);
anything else is refused with ``FILE:LINE`` before anything is written.

Restoring keeps a record's id, type, scope, role, content, event timestamp, metadata,
creation and expiry times. Caller-supplied chunks and vectors are kept only by
:func:`export_with_vectors` (``oramem export --with-vectors``: a header line names the
embedder); otherwise the content is re-chunked and re-embedded with the importing store's
embedder. Message ``seq_no`` is never kept.

Every line is parsed and validated, and ids repeated inside the file are found, before
anything is written; then each batch is one transaction. ``on_conflict`` says what an id
already in the store does: ``"fail"`` (default; that batch writes nothing and the import
stops), ``"skip"`` (the stored record is kept) or ``"replace"`` (the stored record is
deleted and the line's written, in one transaction; only a stored record, thread row or
knowledge row of the line's own user and agent: another's under the id refuses the batch,
red40, imp47). ``skip`` makes an interrupted import resumable: run it again with
``on_conflict="skip"``.
"""

from __future__ import annotations

import datetime as _dt
import json
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Iterator, Optional, Sequence

from .errors import Error, StoreError
from .normalize import parse_timestamp
from .requests import ON_CONFLICT
from .batches import PendingRecordBatch
from .types import PROFILE_TYPES, RECORD_TYPES, SCOPED_TYPES, TTL_TYPES, MessageRecord, Record

__all__ = [
    "EXPORT_TYPES",
    "ADDABLE_TYPES",
    "ON_CONFLICT",
    "ImportLine",
    "ImportResult",
    "ImportStopped",
    "ImportRefused",
    "JSONLError",
    "record_to_dict",
    "export_dict",
    "export_records",
    "SCOPE_KINDS",
    "ExportScope",
    "check_scope",
    "select_scope",
    "export_knowledge",
    "knowledge_vector_dims",
    "check_conflicts",
    "check_knowledge",
    "import_knowledge",
    "write_export_header",
    "knowledge_scope",
    "parse_lines",
    "import_records",
]

#: Record types an export walks, in this order: profiles first so an import recreates actors
#: before their records, then the thread rows (who opened each thread, SC-13.6) before the
#: records that name them.
EXPORT_TYPES = ("user_profile", "agent_profile", "thread", "message", "memory", "guideline", "fact", "preference")
ADDABLE_TYPES = tuple(t for t in RECORD_TYPES if t != "thread")
#: Fields a line may carry that ``add`` takes.
ADD_FIELDS = frozenset(
    {
        "content",
        "id",
        "thread_id",
        "user_id",
        "agent_id",
        "role",
        "timestamp",
        "metadata",
        "ttl_days",
        "ttl_anchor",
        "index_text",
        "embedding",
    }
)
TIME_FIELDS = frozenset({"created_at", "expires_at"})
#: Written by export for reference, ignored by import.
IGNORED_FIELDS = frozenset({"seq_no"})
LINE_FIELDS = ADD_FIELDS | TIME_FIELDS | IGNORED_FIELDS | {"record_type"}
#: Fields of a ``thread`` line (SC-13.6): the thread row as it was (``content`` null and
#: ``thread_id`` equal to ``id`` are accepted, as ``export_dict`` of a thread writes them).
THREAD_FIELDS = frozenset({"record_type", "id", "user_id", "agent_id", "created_at", "content", "thread_id"})


class JSONLError(Error, ValueError):
    """A line that cannot be imported (nothing was written because of it)."""


#: Longest line an import reads, in characters (finding 18: ``import /dev/zero`` must not
#: read forever). A record's text, metadata and vectors fit far below it; a longer line is
#: refused with FILE:LINE before anything is written.
MAX_LINE_CHARS = 64 * 1024 * 1024
#: Deepest nesting of objects and arrays in a line (metadata included).
MAX_DEPTH = 100


def bounded_lines(handle: Any, source: str, limit: int = MAX_LINE_CHARS) -> Iterator[str]:
    """The lines of a text ``handle``, each read with at most ``limit + 1`` characters, so a
    file without line ends (``/dev/zero``) or with one huge line stops at once with a
    :class:`JSONLError` naming ``source:line``; undecodable bytes likewise."""
    lineno = 0
    while True:
        lineno += 1
        try:
            raw = handle.readline(limit + 1)
        except UnicodeDecodeError as exc:
            raise JSONLError(f"{source}:{lineno}: not UTF-8 text ({exc.reason} at byte {exc.start} of a read block); "
                             "save the file as UTF-8") from None
        if not raw:
            return
        if len(raw) > limit:
            raise JSONLError(f"{source}:{lineno}: the line is longer than {limit:,} characters (or has no line end); "
                             "one record per line, each shorter than that; nothing was written")
        yield raw


@dataclass
class ImportLine:
    lineno: int
    record_type: str
    fields: dict[str, Any]
    #: ``(created_at, expires_at)`` to keep, or None (assign as ``add`` does).
    times: Optional[tuple[str, Optional[str]]] = None


@dataclass
class ImportResult:
    total: int
    imported: int = 0
    skipped: int = 0
    by_type: dict[str, int] = field(default_factory=dict)
    #: subjects erased in the store while the import wrote (a receipt written after its
    #: check) whose records the store now holds again: ``{"user": [...], "agent": [...]}``
    erased_during_import: dict[str, list[str]] = field(default_factory=lambda: {"user": [], "agent": []})


class ImportStopped(Exception):
    """The import stopped before the end (an error or Ctrl-C). Batches written before stay
    written; the batch starting at ``lineno`` wrote nothing. ``cause`` is the original
    exception (``KeyboardInterrupt`` for Ctrl-C)."""

    def __init__(self, result: ImportResult, lineno: int, cause: BaseException, last_lineno: Optional[int] = None) -> None:
        self.result = result
        self.lineno = lineno
        #: last line of the batch that wrote nothing
        self.last_lineno = lineno if last_lineno is None else last_lineno
        self.cause = cause
        super().__init__(self.summary())

    def summary(self) -> str:
        r = self.result
        skipped = f", {r.skipped} skipped as already stored" if r.skipped else ""
        return f"{r.imported} of {r.total} record(s) imported{skipped}, stopped at line {self.lineno}"


class ImportRefused(ImportStopped):
    """The store refused the file before anything was written (imp48): an id it stores under
    ``on_conflict="fail"``, or one stored for another user or agent under ``"replace"``
    (``cause``, a ``DuplicateRecordError`` naming the ids, never whose they are), found by
    the pre-check over the whole file. ``linenos``: the file's lines of those ids (``lineno``
    and ``last_lineno`` the first and last); ``result.imported`` is 0."""

    def __init__(self, result: ImportResult, linenos: Sequence[int], cause: BaseException) -> None:
        self.linenos = tuple(sorted(linenos))
        super().__init__(result, self.linenos[0], cause, self.linenos[-1])

    def summary(self) -> str:
        where = ", ".join(map(str, self.linenos[:10])) + (f" and {len(self.linenos) - 10} more"
                                                          if len(self.linenos) > 10 else "")
        return (f"0 of {self.result.total} record(s) imported: refused at line{'s' if len(self.linenos) > 1 else ''} "
                f"{where} before anything was written")


# ----------------------------------------------------------------------------- export
def record_to_dict(record: Record) -> dict[str, Any]:
    """Every field of a record as JSON-compatible values."""
    out: dict[str, Any] = {
        "id": record.id,
        "record_type": record.record_type,
        "content": record.content,
        "timestamp": record.timestamp,
        "metadata": dict(record.metadata) if record.metadata is not None else None,
        "thread_id": record.thread_id,
        "user_id": record.user_id,
        "agent_id": record.agent_id,
        "created_at": record.created_at,
        "expires_at": record.expires_at,
    }
    if isinstance(record, MessageRecord):
        out["role"] = record.role
        out["seq_no"] = record.seq_no
    return out


def export_dict(record: Record) -> dict[str, Any]:
    """The export line of a record: record_type and id first, null fields left out
    (``content`` always written). A thread row is its id, who opened it and when."""
    if record.record_type == "thread":
        line = {"record_type": "thread", "id": record.id, "user_id": record.user_id, "agent_id": record.agent_id,
                "created_at": record.created_at}
        return {k: v for k, v in line.items() if v is not None}
    data = record_to_dict(record)
    out: dict[str, Any] = {"record_type": data.pop("record_type"), "id": data.pop("id")}
    out.update({k: v for k, v in data.items() if v is not None or k == "content"})
    return out


#: the key of the header line ``export --with-vectors`` writes first (the vectors' embedder)
EXPORT_HEADER = "oramem_export"


def write_export_header(write: Callable[[str], Any], header: dict[str, Any]) -> None:
    """The header line ``{"oramem_export": {...}}`` (store id, embedder identity, vector
    dimension), first in a file whose lines carry vectors as they are: ``--with-vectors``
    records, and the knowledge rows of any export (their ``embedding_vec``)."""
    write(json.dumps({EXPORT_HEADER: header}, ensure_ascii=False) + "\n")


def export_with_vectors(write: Callable[[str], Any], header: dict[str, Any], rows: Iterable[tuple[Record, list]]) -> int:
    """Write a header line ``{"oramem_export": {...}}`` (store id, embedder identity, vector
    dimension) and then every ``(record, [(chunk text, float32 vector bytes or None), ...])``
    as its export line plus its retrieval rows as they are: ``index_text`` (the chunk texts,
    ``""`` for none) and ``embedding`` (one vector per chunk), so an import into a store with
    the same embedder writes them back without re-chunking or re-embedding."""
    import numpy as np

    write_export_header(write, header)
    count = 0
    for record, chunks in rows:
        line = export_dict(record)
        if record.record_type == "thread":  # a thread row has no retrieval rows
            write(json.dumps(line, ensure_ascii=False) + "\n")
            count += 1
            continue
        line["index_text"] = [text for text, _ in chunks] if chunks else ""
        if chunks and all(v is not None for _, v in chunks):
            line["embedding"] = [np.frombuffer(v, dtype="<f4").tolist() for _, v in chunks]
        write(json.dumps(line, ensure_ascii=False) + "\n")
        count += 1
    return count


def export_records(store: Any, write: Callable[[str], Any], types: Optional[Sequence[str]] = None, *,
                   scope: Optional["ExportScope"] = None) -> int:
    """Write every live record of ``store`` (of ``types``, default all) as JSON lines
    through ``write``; returns how many. ``scope`` (from :func:`select_scope`): only the
    records of that scope."""
    unknown = sorted(set(types or ()) - set(EXPORT_TYPES))
    if unknown:
        raise ValueError(f"unknown record type(s) {', '.join(unknown)}; export knows {', '.join(EXPORT_TYPES)}")
    count = 0
    if scope is not None:
        for record in scope.records:
            if not types or record.record_type in types:
                write(json.dumps(export_dict(record), ensure_ascii=False) + "\n")
                count += 1
        return count
    for record_type in EXPORT_TYPES:
        if types and record_type not in types:
            continue
        for record in store.list(record_type, limit=None):
            write(json.dumps(export_dict(record), ensure_ascii=False) + "\n")
            count += 1
    return count


# ----------------------------------------------------------------------------- scoped export
#: the scopes an export can be cut to (``oramem export --user / --agent / --thread``)
SCOPE_KINDS = ("user", "agent", "thread")
_SCOPED_ORDER = tuple(t for t in EXPORT_TYPES if t in SCOPED_TYPES)


@dataclass
class ExportScope:
    """The records of one scope, as :func:`select_scope` found them: ``kind`` (``"user"``,
    ``"agent"`` or ``"thread"``), the ``ids`` asked for and ``records`` (export order:
    :data:`EXPORT_TYPES`, then oldest first)."""

    kind: str
    ids: tuple[str, ...]
    records: list[Record]
    #: ``"user"``: the threads the user's ``forget`` removes whole (her private threads,
    #: SC-13.3), whose knowledge rows of no user go with them (KC-3.10)
    removed_threads: tuple[str, ...] = ()

    @property
    def keys(self) -> set[tuple[str, str]]:
        """``(record_type, id)`` of every record of the scope."""
        return {(r.record_type, r.id) for r in self.records}

    def add(self, records: Iterable[Record]) -> None:
        """Add records (those already in are kept) and put all in export order: by type as
        :data:`EXPORT_TYPES`, messages by ``seq_no``, the others by ``created_at``."""
        merged: dict[tuple[str, str], Record] = {}
        for r in [*self.records, *records]:
            merged.setdefault((r.record_type, r.id), r)
        order = {t: i for i, t in enumerate(EXPORT_TYPES)}
        first = {key: i for i, key in enumerate(merged)}
        self.records = sorted(merged.values(), key=lambda r: (
            order[r.record_type],
            r.seq_no if isinstance(r, MessageRecord) and r.seq_no is not None else -1,
            r.created_at or "",
            first[(r.record_type, r.id)],
        ))


def check_scope(kind: str, ids: Sequence[str]) -> tuple[str, ...]:
    """The ids of a scope, checked (a ``ValueError`` before anything is read or written):
    a known kind, at least one id, each a non-empty string; repeats are dropped."""
    if kind not in SCOPE_KINDS:
        raise ValueError(f"a scope is one of {', '.join(SCOPE_KINDS)}, got {kind!r}")
    if isinstance(ids, str):
        raise TypeError(f"the {kind} ids are a list of strings, not one string")
    out = tuple(dict.fromkeys(ids))
    if not out:
        raise ValueError(f"give at least one {kind} id")
    for sid in out:
        if not isinstance(sid, str):
            raise TypeError(f"a {kind} id is a string, got {type(sid).__name__}")
        if not sid.strip() or "\x00" in sid:
            raise ValueError(f"a {kind} id is a non-empty string without NUL, got {sid!r}")
    return out


def select_scope(store: Any, kind: str, ids: Sequence[str]) -> ExportScope:
    """The live records of a scope (SC-13.9), read through the store API (``get`` and
    ``list`` with scope filters, so any engine answers), as the erasing operations decide
    ownership:

    - ``"user"`` U — what ``forget(user_id=U)`` removes (SC-13.3): her profile, every record
      with ``user_id`` U (in any thread), and her private threads whole (a thread in which
      she writes, or which she opened, and where no record names another user, whoever
      opened it, SC-13.2: the records without a user there, e.g. the assistant's replies, go
      with her conversation); plus the thread rows she opened (``forget`` clears her id from
      those that stay, SC-13.2). In a thread another user writes in, only her records: never a
      record of another user, nor the unscoped records there. The row of a thread another
      user opened is never in her file (it names him), even when ``forget`` removes it with
      her private thread.
    - ``"agent"`` A — what ``forget(agent_id=A)`` removes (SC-13.4): its profile, every
      record with ``agent_id`` A (every user's records with that agent: an operator's export)
      and the thread rows naming it.
    - ``"thread"`` T — what ``delete_thread(T)`` removes (SC-8.3): the thread row and every
      record of the thread, whoever wrote it (an operator's export).

    Several ids: the union of each one's scope. Expired records that are not purged yet are
    left out, as every read leaves them out (SC-5.4); the erasing operations judge threads by
    live records too, so a thread where another user wrote only through such a record is
    hers here as for ``forget`` (which leaves his expired records for the purge, SC-13.3)."""
    wanted = check_scope(kind, ids)
    chosen: dict[tuple[str, str], Record] = {}

    def take(records: Iterable[Record]) -> None:
        for r in records:
            chosen.setdefault((r.record_type, r.id), r)

    def scoped(**scope: Any) -> list[Record]:
        return [r for t in _SCOPED_ORDER for r in store.list(t, limit=None, **scope)]

    threads = {r.id: r for r in store.list("thread", limit=None)}  # unscoped type: every thread row
    removed: set[str] = set()
    for sid in wanted:
        if kind == "thread":
            take([threads[sid]] if sid in threads else [])
            take(scoped(thread_id=sid))
            continue
        profile = store.get(f"{kind}_profile", sid)
        take([profile] if profile is not None else [])
        own = scoped(**{f"{kind}_id": sid})
        take(own)
        opened = [r for r in threads.values() if getattr(r, f"{kind}_id") == sid]
        take(opened)
        if kind == "agent":  # a thread removed whole holds only the agent's records: taken above
            continue
        for tid in sorted({r.thread_id for r in own if r.thread_id} | {r.id for r in opened}):
            row = threads.get(tid)
            members = scoped(thread_id=tid)
            # SC-13.3: her private thread, whole; who opened it decides nothing (SC-13.2), but
            # a row naming another user as its opener is his, never handed to her
            if all(r.user_id in (None, sid) for r in members):
                take(members)
                take([row] if row is not None and row.user_id in (None, sid) else [])
                removed.add(tid)
    scope = ExportScope(kind, wanted, [], tuple(sorted(removed)))
    scope.add(chosen.values())
    return scope


# ----------------------------------------------------------------------------- parse
def parse_lines(
    lines: Iterable[str], source: str = "<input>", *, default_type: Optional[str] = None, keep_times: bool = True,
    header: Optional[dict] = None,
) -> list[ImportLine]:
    """Parse and validate every line (nothing is written). Blank lines are skipped, a
    UTF-8 BOM before the first line is accepted, ``text``/``type`` are aliases of
    ``content``/``record_type``, and ``default_type`` is the type of lines without one.
    Raises :class:`JSONLError` naming ``source:line``."""
    if default_type is not None and default_type not in ADDABLE_TYPES:
        raise JSONLError(f"the default record type must be one of {', '.join(ADDABLE_TYPES)}, got {default_type!r}")
    now = parse_timestamp(_dt.datetime.now(_dt.timezone.utc), "now")
    out: list[ImportLine] = []
    seen: dict[tuple[str, str], int] = {}
    if hasattr(lines, "readline"):
        lines = bounded_lines(lines, source)
    for lineno, raw in enumerate(lines, 1):
        if len(raw) > MAX_LINE_CHARS:
            raise JSONLError(f"{source}:{lineno}: the line is longer than {MAX_LINE_CHARS:,} characters; nothing was written")
        if lineno == 1:
            raw = raw.lstrip("\ufeff")
        if not raw.strip():
            continue
        where = f"{source}:{lineno}"
        if not out and raw.lstrip().startswith('{"' + EXPORT_HEADER + '"'):
            found = _header(raw, where)
            if header is not None:
                header.update(found)
            continue
        line = _parse_line(raw, where, lineno, default_type, keep_times, now)
        rid = line.fields.get("id")
        if rid is not None:
            key = (line.record_type, rid)
            if key in seen:
                raise JSONLError(f"{where}: id {rid!r} ({line.record_type}) already appears on line {seen[key]}")
            seen[key] = lineno
        out.append(line)
    return out


def _loads(raw: str, where: str) -> Any:
    """One line's JSON, with its nesting and its strings checked (finding 18): deeper than
    :data:`MAX_DEPTH`, or a lone surrogate escape (``"\\ud800"``: not Unicode text, which no
    store can hold), is a :class:`JSONLError` naming the line."""
    try:
        obj = json.loads(raw)
    except RecursionError:
        raise JSONLError(f"{where}: nested more than {MAX_DEPTH} levels deep; flatten the metadata") from None
    except ValueError as exc:
        raise JSONLError(f"{where}: not valid JSON ({getattr(exc, 'msg', exc)})") from None
    deep = raw.count("[") + raw.count("{") > MAX_DEPTH
    escaped = "\\ud" in raw or "\\uD" in raw
    if deep or escaped:
        _walk(obj, where)
    return obj


def _walk(obj: Any, where: str) -> None:
    stack = [(obj, 1)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, str):
            try:
                value.encode("utf-8")
            except UnicodeEncodeError as exc:
                raise JSONLError(f"{where}: a string holds a lone surrogate (\\u{ord(value[exc.start]):04x}), which is "
                                 "not Unicode text; fix the line's encoding; nothing was written") from None
        elif isinstance(value, (dict, list)):
            if depth > MAX_DEPTH:
                raise JSONLError(f"{where}: nested more than {MAX_DEPTH} levels deep; flatten the metadata")
            items = list(value.items()) if isinstance(value, dict) else [(None, v) for v in value]
            for key, item in items:
                if key is not None:
                    stack.append((key, depth))
                stack.append((item, depth + 1))


def _header(raw: str, where: str) -> dict:
    obj = _loads(raw, where)
    if not isinstance(obj, dict) or set(obj) != {EXPORT_HEADER} or not isinstance(obj[EXPORT_HEADER], dict):
        raise JSONLError(f"{where}: a header line is {{\"{EXPORT_HEADER}\": {{...}}}} and nothing else")
    return dict(obj[EXPORT_HEADER])


def _parse_line(raw: str, where: str, lineno: int, default_type: Optional[str], keep_times: bool, now: str) -> ImportLine:
    obj = _loads(raw, where)
    if not isinstance(obj, dict):
        raise JSONLError(f"{where}: expected a JSON object, got {type(obj).__name__}")
    if KG_KEY in obj:
        return _kg_line(obj, where, lineno)
    if ERASURE_KEY in obj:
        return _erasure_line(obj, where, lineno)
    for alias, name in (("text", "content"), ("type", "record_type")):
        if alias in obj:
            if name in obj:
                raise JSONLError(f"{where}: give {name} or its alias {alias}, not both")
            obj[name] = obj.pop(alias)
    unknown = sorted(set(obj) - LINE_FIELDS)
    if unknown:
        raise JSONLError(f"{where}: unknown field(s) {', '.join(unknown)}; accepted: {', '.join(sorted(LINE_FIELDS))}")
    if obj.get("record_type") == "thread":
        return _thread_line(obj, where, lineno, keep_times, now)
    record_type = obj.get("record_type", default_type)
    if record_type not in ADDABLE_TYPES:
        hint = "" if "record_type" in obj else " (give record_type on the line, or a default type)"
        raise JSONLError(f"{where}: record_type must be one of {', '.join(ADDABLE_TYPES)}, got {record_type!r}{hint}")
    fields = {k: v for k, v in obj.items() if k in ADD_FIELDS}
    if record_type in PROFILE_TYPES and fields.get("role") is None:
        fields.pop("role", None)
    times = None
    if keep_times and ("created_at" in obj or "expires_at" in obj):
        # kept times replace the TTL (expires_at absent or null = never expires), so a
        # line with both is ambiguous
        for name in ("ttl_days", "ttl_anchor"):
            if name in fields:
                raise JSONLError(
                    f"{where}: {name} does not go with created_at/expires_at (kept as they are); "
                    "drop one, or import with fresh times"
                )
        times = _times(obj, record_type, where, now)
    ttl = fields.get("ttl_days")
    if times is None and isinstance(ttl, (int, float)) and not isinstance(ttl, bool) and ttl <= 0:
        # counted from now it expires at once and the next open purges it: refused as add does
        raise JSONLError(f"{where}: ttl_days {ttl} would expire the record at once; give 1 or more days, "
                         "or leave ttl_days out")
    line = ImportLine(lineno, record_type, fields, times)
    try:
        make_batch([line])
    except (ValueError, TypeError) as exc:
        raise JSONLError(f"{where}: {_in_line_words(_one_line(exc))}") from None
    return line


def _thread_line(obj: dict, where: str, lineno: int, keep_times: bool, now: str) -> ImportLine:
    """A ``thread`` line: the thread row as the export wrote it (SC-13.6)."""
    from .normalize import check_id

    unknown = sorted(set(obj) - THREAD_FIELDS)
    if unknown:
        raise JSONLError(f"{where}: a thread line takes id, user_id, agent_id and created_at; unknown here: "
                         f"{', '.join(unknown)}")
    try:
        tid = check_id(obj.get("id"), "id")
        fields = {"id": tid, "user_id": check_id(obj.get("user_id"), "user_id", optional=True),
                  "agent_id": check_id(obj.get("agent_id"), "agent_id", optional=True)}
    except (ValueError, TypeError) as exc:
        raise JSONLError(f"{where}: {_one_line(exc)}") from None
    if obj.get("content") is not None or obj.get("thread_id") not in (None, tid):
        raise JSONLError(f"{where}: a thread line has no content, and its thread_id (if given) is its id")
    times = _times(obj, "thread", where, now) if keep_times and obj.get("created_at") is not None else None
    return ImportLine(lineno, "thread", fields, times)


def _times(obj: dict, record_type: str, where: str, now: str) -> tuple[str, Optional[str]]:
    try:
        created = parse_timestamp(obj["created_at"], "created_at") if obj.get("created_at") is not None else now
        expires = parse_timestamp(obj["expires_at"], "expires_at") if obj.get("expires_at") is not None else None
    except (ValueError, TypeError) as exc:
        raise JSONLError(f"{where}: {_one_line(exc)}") from None
    if expires is not None and record_type not in TTL_TYPES:
        raise JSONLError(f"{where}: a {record_type} record never expires; drop its expires_at")
    return created, expires


def _one_line(exc: BaseException) -> str:
    return " ".join((str(exc).strip() or type(exc).__name__).split())


def _in_line_words(message: str) -> str:
    """An error of the batch API about one line, in the words of the file: its field names
    (``timestamps='x'`` -> ``timestamp='x'``) and JSON values (``None`` -> ``null``)."""
    import re

    for field_name, argument in (*_BATCH_ARGS, ("content", "contents"), ("content", "texts")):
        # a line is one record: the batch's list argument ``user_ids[0]`` is the line's ``user_id``
        message = re.sub(rf"(?<![\w-]){argument}(?:\[0\])?(?![\w-])", field_name, message)
    message = message.replace("role apply only", "role applies only")
    message = message.replace("(pass None for no value)", "(null, or leave the field out, for no value)")
    return message.replace("a dict or None", "a JSON object or null").replace("or None", "or null")


# ----------------------------------------------------------------------------- batches
_BATCH_ARGS = (
    ("id", "record_ids"),
    ("thread_id", "thread_ids"),
    ("user_id", "user_ids"),
    ("agent_id", "agent_ids"),
    ("role", "roles"),
    ("timestamp", "timestamps"),
    ("metadata", "metadata"),
    ("index_text", "index_texts"),
    ("embedding", "embeddings"),
    ("ttl_days", "ttl_days"),
    ("ttl_anchor", "ttl_anchor"),
)
#: Fields whose omission means something different from null; lines are only grouped
#: into one PendingRecordBatch when they agree on having them.
_PRESENCE_SENSITIVE = ("ttl_days", "ttl_anchor")


def _group_key(line: ImportLine) -> tuple:
    return (line.record_type,) + tuple(f in line.fields for f in _PRESENCE_SENSITIVE)


def make_batch(lines: Sequence[ImportLine]) -> PendingRecordBatch:
    """One PendingRecordBatch for lines of one record type and one presence pattern."""
    kwargs: dict[str, Any] = {}
    for field_name, arg in _BATCH_ARGS:
        if any(field_name in ln.fields for ln in lines):
            kwargs[arg] = [ln.fields.get(field_name) for ln in lines]
    return PendingRecordBatch(texts=[ln.fields.get("content") for ln in lines], record_type=lines[0].record_type, **kwargs)


def make_batches(lines: Sequence[ImportLine]) -> list[PendingRecordBatch]:
    batches: list[PendingRecordBatch] = []
    run: list[ImportLine] = []
    for line in lines:
        if run and _group_key(run[-1]) != _group_key(line):
            batches.append(make_batch(run))
            run = []
        run.append(line)
    if run:
        batches.append(make_batch(run))
    return batches


def _chunks(lines: Sequence[ImportLine], size: int) -> Iterator[Sequence[ImportLine]]:
    """Runs of at most ``size`` lines; a run also ends before an id it already holds (one
    store call takes an id once, even under two record types)."""
    run: list[ImportLine] = []
    ids: set = set()
    for line in lines:
        rid = line.fields.get("id")
        if run and (len(run) >= size or (rid is not None and rid in ids)):
            yield run
            run, ids = [], set()
        run.append(line)
        if rid is not None:
            ids.add(rid)
    if run:
        yield run


# ----------------------------------------------------------------------------- import
def import_records(
    store: Any,
    lines: Sequence[ImportLine],
    *,
    on_conflict: str = "fail",
    batch_size: int = 500,
    progress: Optional[Callable[[int], Any]] = None,
    allow_erased: bool = False,
    keep_verdicts: bool = False,
) -> ImportResult:
    """Write parsed ``lines`` (from :func:`parse_lines`), ``batch_size`` per transaction.

    SC-14.4: before anything is written, records (and thread and knowledge lines) of a
    subject erased in ``store`` or in the file's own erasure log are refused
    (:class:`oramem.trust.erasure.ErasedSubjectError`) unless ``allow_erased``; then the
    file's erasure-log lines join the store's log.

    SC-15.4: a line's firewall verdict (metadata ``oramem_firewall``) is re-screened when the
    store has a policy and dropped when it has none, unless ``keep_verdicts`` (the caller
    vouches for the file: a backup of its own store, not edited since).

    imp48: before anything is written (the erasure-log lines too), :func:`check_conflicts`
    looks up the whole file's ids in one read and raises :class:`ImportRefused` (a subclass
    of :class:`ImportStopped`, nothing imported) for what a batch would refuse: a stored id
    under "fail", a stored record or thread row of another user or agent under "replace".
    SQLite only: the Oracle store has no read of many ids with their user and agent, so there
    a batch finds the refusal (-20005) and the batches before it stay written.

    Raises :class:`ImportStopped` (with the counts so far and the first line not written)
    when a batch fails (a record another writer stored after the check, a store error) or
    on Ctrl-C; ``progress`` is called with the lines done per batch."""
    if on_conflict not in ON_CONFLICT:
        raise ValueError(f"on_conflict must be one of {', '.join(ON_CONFLICT)}, got {on_conflict!r}")
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size must be an int >= 1, got {batch_size!r}")
    if not isinstance(keep_verdicts, bool):
        raise TypeError(f"keep_verdicts must be True or False, got {type(keep_verdicts).__name__}")
    check_erased(store, lines, allow_erased=allow_erased)
    total = sum(1 for ln in lines if ln.record_type not in ("kg_row", "erasure_log"))
    # imp48: the refusals the file decides (a stored id under "fail", another scope's under
    # "replace"), over the whole file before anything of it is written: the erasure-log lines
    # too, so a refused file writes nothing at all (the batches check again in their own
    # transactions: a concurrent writer's record is still caught there)
    check_conflicts(store, lines, on_conflict=on_conflict, total=total)
    merge_erasure_log(store, lines)
    seen = _receipt_ids(store)
    lines = [ln for ln in lines if ln.record_type != "erasure_log"]
    result = ImportResult(total=total)
    threads = [ln for ln in lines if ln.record_type == "thread"]
    records = [ln for ln in lines if ln.record_type not in ("thread", "kg_row")]  # kg rows: import_knowledge
    # SC-13.6: the thread rows first, as the file has them, so the records naming them do
    # not create them with their own scope; a thread that exists keeps its row (unless
    # on_conflict is "replace")
    written_threads: set[Any] = set()
    for start in range(0, len(threads), batch_size):
        block = threads[start:start + batch_size]
        rows = [(ln.fields["id"], ln.fields["user_id"], ln.fields["agent_id"], ln.times[0] if ln.times else None)
                for ln in block]
        try:
            written = set(store.restore_threads(rows, on_conflict="replace" if on_conflict == "replace" else "skip"))
        except (ValueError, TypeError, StoreError, KeyboardInterrupt) as exc:
            raise ImportStopped(result, block[0].lineno, exc, block[-1].lineno) from exc
        written_threads.update(written)
        for ln in block:
            if ln.fields["id"] in written:
                result.imported += 1
                result.by_type["thread"] = result.by_type.get("thread", 0) + 1
            else:
                result.skipped += 1
        if progress is not None:
            progress(len(block))
    landed: list[ImportLine] = [ln for ln in threads if ln.fields["id"] in written_threads]
    for part in _chunks(records, batch_size):
        try:
            written = store.restore_batches(
                make_batches(part), times=[ln.times for ln in part], on_conflict=on_conflict, batch_size=batch_size,
                keep_verdicts=keep_verdicts,
            )
        except (ValueError, TypeError, StoreError, KeyboardInterrupt) as exc:
            raise ImportStopped(result, part[0].lineno, exc, part[-1].lineno) from exc
        done = set(written)
        for ln in part:
            # ids are unique per type in the file; a line without an id always lands
            if ln.fields.get("id") is None or ln.fields["id"] in done:
                result.imported += 1
                result.by_type[ln.record_type] = result.by_type.get(ln.record_type, 0) + 1
                landed.append(ln)
            else:
                result.skipped += 1
        if progress is not None:
            progress(len(part))
    if not allow_erased and seen is not None:
        # SC-14.4: an erasure that committed between two batches (after the check above)
        # does not stop the later ones: say which of its subjects the store holds again
        from .trust.erasure import erased_since

        late = erased_since(store, seen, *line_scopes(landed))
        if any(late.values()):
            late = _restored_by(store, landed, late)
        result.erased_during_import = late
    return result


def check_conflicts(store: Any, lines: Sequence[ImportLine], *, on_conflict: str = "fail",
                    total: Optional[int] = None) -> bool:
    """What :func:`import_records`'s batches would refuse for the ids ``store`` holds now,
    checked over all ``lines`` in one read, writing nothing (imp48): under "fail" a record
    line's stored id (thread lines are restored with "skip" then), under "replace" a stored
    record or thread row of another user or agent (the engine's own rule, red40/imp47);
    "skip" refuses nothing. Raises :class:`ImportRefused` naming the lines. Returns whether
    the store's engine checked (SQLite does; Oracle has no such read, and its batches find
    the refusal, writing the batches before it)."""
    from .errors import DuplicateRecordError

    if on_conflict not in ON_CONFLICT:
        raise ValueError(f"on_conflict must be one of {', '.join(ON_CONFLICT)}, got {on_conflict!r}")
    if on_conflict == "skip":
        return True
    line_of: dict[tuple[str, str], int] = {}
    keys: list[tuple[str, str, Optional[str], Optional[str]]] = []
    for ln in lines:
        rid = ln.fields.get("id") if ln.record_type not in ("kg_row", "erasure_log") else None
        if rid is None or (ln.record_type == "thread" and on_conflict != "replace"):
            continue
        keys.append((ln.record_type, rid, ln.fields.get("agent_id"), ln.fields.get("user_id")))
        line_of[(ln.record_type, rid)] = ln.lineno
    if not keys:
        return True
    if total is None:
        total = sum(1 for ln in lines if ln.record_type not in ("kg_row", "erasure_log"))
    try:
        return bool(store._check_restore(keys, on_conflict))
    except DuplicateRecordError as exc:
        # the engine names the ids it refuses (SQLite does): their lines, else every checked line
        refused = [line_of[k] for k in exc.records if k in line_of] or sorted(line_of.values())
        raise ImportRefused(ImportResult(total=total), refused, exc) from exc
    except (ValueError, TypeError, StoreError, KeyboardInterrupt) as exc:
        first = min(line_of.values())
        raise ImportStopped(ImportResult(total=total), first, exc) from exc


def _restored_by(store: Any, landed: Sequence[ImportLine], late: dict[str, list[str]]) -> dict[str, list[str]]:
    """Of the subjects erased while the import ran (``late``), those a record this import
    wrote still names: a record written for her by someone else after her erasure is hers
    now, not the import's to report (erasing her again would take it). A line whose record
    cannot be looked up (no id, a thread row) counts as restored."""
    out: dict[str, list[str]] = {"user": [], "agent": []}
    for kind, key, profile in (("user", "user_id", "user_profile"), ("agent", "agent_id", "agent_profile")):
        for subject in late[kind]:
            for ln in landed:
                f = ln.fields
                if ln.record_type == profile and f.get("id") == subject:
                    hit = store.get(profile, subject) is not None
                elif f.get(key) == subject:
                    hit = (ln.record_type == "thread" or f.get("id") is None
                           or store.get(ln.record_type, f["id"]) is not None)
                else:
                    continue
                if hit:
                    out[kind].append(subject)
                    break
    return out


def _receipt_ids(store: Any) -> Optional[set[Any]]:
    """The receipt ids of the store's erasure log (None on an engine without one)."""
    from .errors import CapabilityError
    from .trust.erasure import erasure_log

    try:
        return {e.get("receipt_id") for e in erasure_log(store)}
    except CapabilityError:
        return None


# ----------------------------------------------------------------------------- knowledge rows
#: The key of a knowledge-layer line: ``{"kg_table": "FACT", "row": {...}}`` (finding 10: a
#: backup carries the store's ``<ID>_KG_*`` rows). The table is named without the store
#: prefix, so a backup imports into a store of another id.
KG_KEY = "kg_table"


def _kg_mapping(store_id: str, vector_dim: Optional[int]) -> Any:
    """The knowledge layer's table objects (``oramem.knowledge.db.schema``), parents first: the
    columns and their types come from that mapping, so a table or a column it adds is
    carried without a change here."""
    from .knowledge.db.schema import build_tables

    return build_tables(store_id, int(vector_dim or 1))


def _kg_suffix(name: str, store_id: str) -> str:
    return name[len(f"{store_id.upper()}_KG_"):]


def kg_table_names() -> frozenset[str]:
    """The knowledge tables a line may name (without the store prefix)."""
    return frozenset(_kg_suffix(t.name, "X") for t in _kg_mapping("X", 1).metadata.sorted_tables)


def _kg_encode(value: Any) -> Any:
    """A value as the mapping reads it -> JSON (times as ISO-8601 UTC, vectors as lists)."""
    import numpy as np

    if isinstance(value, _dt.datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=_dt.timezone.utc)
        return value.astimezone(_dt.timezone.utc).isoformat(timespec="microseconds")
    if isinstance(value, np.ndarray):
        return [float(x) for x in value.astype(np.float32)]
    if isinstance(value, (bytes, bytearray, memoryview)):
        import base64

        return {"$base64": base64.b64encode(bytes(value)).decode("ascii")}
    if isinstance(value, np.generic):
        return value.item()
    return value


def _kg_decode(value: Any, column: Any) -> Any:
    """A JSON value back to what the column's type binds (the inverse of :func:`_kg_encode`)."""
    from . import timeutil
    from .knowledge.db.schema import UTCDateTime, Vector

    if value is None:
        return None
    kind = column.type
    if isinstance(kind, UTCDateTime) and isinstance(value, str):
        return timeutil.parse_iso(value)
    if isinstance(kind, Vector) and isinstance(value, list):
        import numpy as np

        return np.asarray(value, dtype=np.float32)
    if isinstance(value, dict) and set(value) == {"$base64"} and _kg_binary(column):
        import base64

        return base64.b64decode(value["$base64"])
    return value


def _kg_binary(column: Any) -> bool:
    """A bytes column (none of the knowledge tables has one today): the only kind whose value
    a line may give as ``{"$base64": ...}`` (:func:`_kg_encode` writes bytes so)."""
    import sqlalchemy as sa

    from .knowledge.db.schema import Vector

    return isinstance(column.type, sa.LargeBinary) and not isinstance(column.type, Vector)


def _kg_check_bytes(table: Any, name: str, row: dict, where: str) -> None:
    """Bytes only where the column holds bytes: {"$base64": ...} in a text or JSON column was
    decoded and stored as a BLOB (or as the JSON text "b'...'"), past the firewall's
    screening of the row's strings (red31)."""
    not_bytes = sorted(k for k, v in row.items()
                       if isinstance(v, dict) and set(v) == {"$base64"} and not _kg_binary(table.c[k]))
    if not_bytes:
        raise JSONLError(f"{where}: knowledge table {name} column(s) {', '.join(not_bytes)} hold text, JSON, "
                         "numbers, times or vectors, not bytes: a {\"$base64\": ...} value there is not from "
                         "`oramem export`; give the value as the export writes it, or export again")


def _kg_line(obj: dict, where: str, lineno: int) -> ImportLine:
    if set(obj) != {KG_KEY, "row"} or not isinstance(obj.get("row"), dict):
        raise JSONLError(f"{where}: a knowledge line is {{\"{KG_KEY}\": NAME, \"row\": {{...}}}} and nothing else")
    name = obj[KG_KEY]
    tables = {_kg_suffix(t.name, "X"): t for t in _kg_mapping("X", 1).metadata.sorted_tables}
    if not isinstance(name, str) or name not in tables:
        raise JSONLError(f"{where}: unknown knowledge table {name!r}; known: {', '.join(sorted(tables))}")
    unknown = sorted(set(obj["row"]) - {c.name for c in tables[name].columns})
    if unknown:
        raise JSONLError(f"{where}: knowledge table {name} has no column(s) {', '.join(unknown)}")
    _kg_check_bytes(tables[name], name, obj["row"], where)
    return ImportLine(lineno, "kg_row", {"table": name, "row": obj["row"]})


def export_knowledge(engine: Any, store_id: str, vector_dim: Optional[int], write: Callable[[str], Any], *,
                     rows: Optional[dict[str, set[Any]]] = None) -> int:
    """Write every row of the store's knowledge tables present in ``engine``'s database as
    knowledge lines, parents first; returns how many. Only the columns both the mapping
    and the table have are read (a store from before a column was added exports without it).
    ``rows`` (from :func:`knowledge_scope`): only those rows, by table name and primary key."""
    import sqlalchemy as sa

    from .knowledge.db.queries import chunked

    insp = sa.inspect(engine)
    count = 0
    with engine.connect() as conn:
        for table in _kg_mapping(store_id, vector_dim).metadata.sorted_tables:
            if not insp.has_table(table.name):
                continue
            have = {c["name"].lower() for c in insp.get_columns(table.name)}
            columns = [c for c in table.columns if c.name.lower() in have]
            pk = [c for c in table.primary_key.columns if c.name.lower() in have]
            suffix = _kg_suffix(table.name, store_id)
            if rows is None:
                selects = [sa.select(*columns).order_by(*pk)]
            else:
                keys = sorted(rows.get(table.name) or ())
                assert len(pk) == 1, table.name  # every knowledge table has a one-column key
                selects = [sa.select(*columns).where(pk[0].in_(batch)).order_by(*pk) for batch in chunked(keys)]
            for select in selects:
                for row in conn.execute(select):
                    data = {c.name: _kg_encode(row._mapping[c.name]) for c in columns}
                    write(json.dumps({KG_KEY: suffix, "row": data}, ensure_ascii=False, allow_nan=False) + "\n")
                    count += 1
    return count


def knowledge_scope(engine: Any, store: Any, scope: ExportScope) -> dict[str, set[Any]]:
    """The knowledge rows of ``scope`` in ``engine``'s database (by table name, primary
    keys): what the erasing operation of the scope removes from the knowledge tables, one
    notion with it (:func:`oramem.knowledge.ownership.owned_rows`; for a user, rows of another
    user's scope are left out). For a user it also adds to ``scope.records`` the store
    records of her knowledge facts and events that the store's scope filters do not find (a
    shared fact learned from her message has no ``user_id``; ``forget`` deletes its record
    with it). Empty when the store has no knowledge tables. A :class:`JSONLError` when the
    tables are incomplete or predate the user dimension (a user's rows cannot be told
    apart), before anything is written."""
    import sqlalchemy as sa

    from .knowledge.ownership import owned_rows

    tables = _kg_mapping(store.memory_store_id, store.vector_dim)
    insp = sa.inspect(engine)
    wanted = list(tables.metadata.sorted_tables)
    present = [t for t in wanted if insp.has_table(t.name)]
    if not present:
        return {}
    if len(present) < len(wanted):
        names = {t.name for t in present}
        absent = ", ".join(t.name for t in wanted if t.name not in names)
        raise JSONLError(f"the store's knowledge tables are incomplete ({absent} missing): open the store once with "
                         "KnowledgeMemory to create them, or export the records alone with --no-knowledge; nothing "
                         "was written")
    for table in present:
        have = {c["name"].lower() for c in insp.get_columns(table.name)}
        missing = sorted(c.name for c in table.columns if c.name.lower() not in have)
        if missing:
            raise JSONLError(
                f"the knowledge table {table.name} lacks column(s) {', '.join(missing)} (made by an older oramem): "
                "open the store once with KnowledgeMemory (schema_policy CREATE_IF_NECESSARY upgrades it in place), or "
                "export the records alone with --no-knowledge; nothing was written")
    with engine.connect() as conn:
        rows = owned_rows(conn, tables, scope.kind, scope.ids, scope.keys, threads=scope.removed_threads)
    if scope.kind == "user":  # the knowledge store records forget deletes with her rows (ErasureReport.records)
        have = scope.keys
        extra = [r for rtype, table in (("fact", tables.fact), ("message", tables.event))
                 for rid in sorted(rows.get(table.name, ())) if (rtype, rid) not in have
                 # never another user's record under the id (forget leaves it too)
                 for r in [store.get(rtype, rid)] if r is not None and r.user_id in (None, *scope.ids)]
        if extra:
            scope.add(extra)
    return rows


def knowledge_vector_dims(lines: Sequence[ImportLine]) -> dict[int, int]:
    """How many knowledge lines carry a vector of each length (their vector columns, e.g.
    ``embedding_vec``; a vector is written as it is, never re-embedded)."""
    if not lines:  # no knowledge lines: no SQLAlchemy to load (docs/new-user-trial.md #26)
        return {}
    from .knowledge.db.schema import Vector

    vector_columns = {_kg_suffix(t.name, "X"): [c.name for c in t.columns if isinstance(c.type, Vector)]
                      for t in _kg_mapping("X", 1).metadata.sorted_tables}
    dims: dict[int, int] = {}
    for ln in lines:
        row = ln.fields["row"]
        for name in vector_columns.get(ln.fields["table"], ()):
            value = row.get(name)
            if isinstance(value, list):
                dims[len(value)] = dims.get(len(value), 0) + 1
    return dims


def screen_knowledge(policy: Any, lines: Sequence[ImportLine]) -> None:
    """SC-15.6 for a backup's knowledge rows: under the target store's firewall ``policy``
    (``store.get_firewall()``; None = no policy, nothing to do) every text a row holds (each
    string at any depth and each key of a JSON value; time and vector columns aside) is
    screened, and a finding the policy does not allow refuses the whole import with
    :class:`oramem.trust.FirewallRejected` before anything is written. A row cannot be
    redacted or flagged here as a write is: its vectors were made from its text and are never
    re-embedded, and a knowledge row carries no verdict (a flagged write stores nothing)."""
    if policy is None or not lines:
        return
    from .knowledge.db.schema import UTCDateTime, Vector  # SQLAlchemy: only with knowledge rows to screen
    from .trust.firewall import FirewallPolicy, FirewallRejected, _Screen

    if not isinstance(policy, FirewallPolicy):
        raise TypeError(f"policy must be an oramem.trust.FirewallPolicy or None, got {type(policy).__name__}")
    detectors = policy.active_detectors()
    tables = {_kg_suffix(t.name, "X"): t for t in _kg_mapping("X", 1).metadata.sorted_tables}
    found: list[tuple[int, str]] = []
    where: list[str] = []
    for ln in lines:
        if ln.record_type != "kg_row":
            continue
        table = tables[ln.fields["table"]]
        texts = {k: v for k, v in ln.fields["row"].items()
                 if not isinstance(table.c[k].type, (UTCDateTime, Vector))
                 and not (isinstance(v, dict) and set(v) == {"$base64"} and _kg_binary(table.c[k]))}
        screen = _Screen(policy, detectors)
        screen.value(texts)
        if screen.rejected or screen.redacted or screen.flagged:
            names = sorted(screen.names)
            found.extend((ln.lineno, n) for n in names)
            where.append(f"line {ln.lineno} ({ln.fields['table']}): {', '.join(names)}")
    if found:
        more = f" and {len(where) - 5} more" if len(where) > 5 else ""
        raise FirewallRejected(
            f"the store's firewall finds content its policy does not allow in knowledge rows of the file "
            f"({'; '.join(where[:5])}{more}); knowledge rows are imported as they are (their vectors are never "
            "re-embedded and they carry no verdict), so nothing was written. Export without the knowledge "
            "(`oramem export --no-knowledge`) and let new writes rebuild it through the firewall, or change the "
            "policy (`oramem firewall set ...`)", found)


#: A knowledge row's scope (KC-3.7): its agent and its user (NULL: the agent's shared
#: knowledge), those of the two columns its table has.
KG_SCOPE_COLUMNS = ("agent_id", "user_id")


def _kg_scope(table: Any, row: dict) -> tuple:
    return tuple(row.get(c) for c in KG_SCOPE_COLUMNS if c in table.c)


def _kg_plan(conn: Any, tables: Any, store_id: str, vector_dim: Optional[int], lines: Sequence[ImportLine],
             on_conflict: str, have: Optional[set[str]] = None) -> list[tuple[Any, list, list, list, set]]:
    """Check the knowledge lines against the tables ``conn`` reads, before any row is
    written: each row's primary key, bytes and vector lengths, then the rows stored under
    their keys. "fail": a stored key refuses them all; "replace": a stored row of another
    scope (another ``agent_id`` / ``user_id`` than the line's, NULL equal only to NULL; the
    columns the table has) refuses them all, naming the keys, never whose rows they are
    (imp47, red40's rule for records). ``have``: the names of the tables that exist (None:
    all of them); an absent one holds nothing. Returns per table, parents first:
    (table, primary key columns, [(line, decoded row)], keys, keys stored)."""
    import sqlalchemy as sa

    from .knowledge.db.schema import Vector

    by_table: dict[str, list[ImportLine]] = {}
    for ln in lines:
        by_table.setdefault(ln.fields["table"], []).append(ln)
    plan = []
    foreign: list[tuple[str, tuple, int]] = []
    for table in tables.metadata.sorted_tables:
        group = by_table.get(_kg_suffix(table.name, store_id))
        if not group:
            continue
        pk = list(table.primary_key.columns)
        rows = []
        for ln in group:
            missing = [c.name for c in pk if ln.fields["row"].get(c.name) is None]
            if missing:
                raise JSONLError(f"line {ln.lineno}: knowledge row of {ln.fields['table']} lacks {', '.join(missing)}")
            _kg_check_bytes(table, ln.fields["table"], ln.fields["row"], f"line {ln.lineno}")
            for name, value in ln.fields["row"].items():  # written as they are: of this store's dimension
                if (isinstance(value, list) and isinstance(table.c[name].type, Vector)
                        and vector_dim is not None and len(value) != int(vector_dim)):
                    raise JSONLError(f"line {ln.lineno}: knowledge row of {ln.fields['table']} has a {len(value)}-dimensional "
                                     f"{name}; this store's vectors have {vector_dim} dimensions (knowledge vectors "
                                     "are never re-embedded: import into a store of the embedder that made them); "
                                     "no knowledge row was written")
            rows.append((ln, {k: _kg_decode(v, table.c[k]) for k, v in ln.fields["row"].items()}))
        keys = [tuple(r[c.name] for c in pk) for _, r in rows]
        stored: dict[tuple, tuple] = {}
        if have is None or table.name in have:
            columns = [table.c[c] for c in KG_SCOPE_COLUMNS if c in table.c]
            if have is not None:  # a table of an older schema may lack user_id: its rows are of no user
                names = {c["name"].lower() for c in sa.inspect(conn).get_columns(table.name)}
                columns = [c for c in columns if c.name.lower() in names]
            for start in range(0, len(keys), 500):
                part = keys[start:start + 500]
                cond = pk[0].in_([k[0] for k in part]) if len(pk) == 1 else sa.tuple_(*pk).in_(part)
                for r in conn.execute(sa.select(*pk, *columns).where(cond)):
                    found = dict(zip([c.name for c in columns], r[len(pk):]))
                    stored[tuple(r[:len(pk)])] = _kg_scope(table, found)
        conflicts = [(ln, k) for (ln, _), k in zip(rows, keys) if k in stored]
        if conflicts and on_conflict == "fail":
            ln, key = conflicts[0]
            raise JSONLError(f"line {ln.lineno}: knowledge row {list(key)} of {ln.fields['table']} is already "
                             "stored; import with --on-conflict skip or replace; no knowledge row was written")
        if on_conflict == "replace":
            foreign += [(ln.fields["table"], k, ln.lineno) for (ln, r), k in zip(rows, keys)
                        if k in stored and stored[k] != _kg_scope(table, r)]
        plan.append((table, pk, rows, keys, set(stored)))
    if foreign:
        listed = ", ".join(f"{name} {list(key)} (line {lineno})" for name, key, lineno in foreign[:5])
        more = f" and {len(foreign) - 5} more" if len(foreign) > 5 else ""
        raise JSONLError(
            f"knowledge rows stored for another user or agent than the file's rows name: {listed}{more}; replace only "
            "replaces a row of the same user and agent (the same row, restored), so no knowledge row was written: "
            "give these rows other ids, leave them out of the file, or import with --on-conflict skip to keep the "
            "stored rows")
    return plan


def check_knowledge(engine: Any, store_id: str, vector_dim: Optional[int], lines: Sequence[ImportLine], *,
                    on_conflict: str = "fail") -> None:
    """What :func:`import_knowledge` refuses before it writes a row (a row without its primary
    key, bytes or vectors that do not fit, a stored key under "fail", a stored row of
    another scope under "replace"), checked against the tables as they are now, writing
    nothing (no table is created): ``oramem import`` calls it before it writes any record,
    so such a file writes nothing at all. A :class:`JSONLError` naming the lines and keys."""
    import sqlalchemy as sa

    if on_conflict not in ON_CONFLICT:
        raise ValueError(f"on_conflict must be one of {', '.join(ON_CONFLICT)}, got {on_conflict!r}")
    if not lines:
        return
    tables = _kg_mapping(store_id, vector_dim)
    insp = sa.inspect(engine)
    have = {t.name for t in tables.metadata.sorted_tables if insp.has_table(t.name)}
    with engine.connect() as conn:
        _kg_plan(conn, tables, store_id, vector_dim, lines, on_conflict, have)


def import_knowledge(engine: Any, store_id: str, vector_dim: Optional[int], lines: Sequence[ImportLine], *,
                     policy: Any, on_conflict: str = "fail", batch_size: int = 500) -> tuple[int, int]:
    """Write knowledge lines into the store's knowledge tables (created when missing, as
    ``KnowledgeMemory`` does), parents first, in one transaction (``batch_size`` rows per
    statement): a row that cannot be written (a UNIQUE constraint, a NOT NULL column)
    leaves no knowledge row of the call written. A row whose primary key is stored: "fail"
    stops before anything of the knowledge rows is written, "skip" keeps the stored row
    (whoever's it is; it counts as skipped), "replace" replaces it when it is of the same
    scope (its table's ``agent_id`` and ``user_id``, as the line's) and refuses every row
    when one is of another scope (imp47; :func:`check_knowledge`). ``policy``: the store's
    firewall policy (``store.get_firewall()``, None for none), which the rows are screened
    against first (:func:`screen_knowledge`). Returns (written, skipped)."""
    import sqlalchemy as sa

    from .knowledge.db.schema import apply_schema_policy
    from .types import SchemaPolicy

    if on_conflict not in ON_CONFLICT:
        raise ValueError(f"on_conflict must be one of {', '.join(ON_CONFLICT)}, got {on_conflict!r}")
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size must be an int >= 1, got {batch_size!r}")
    if not lines:
        return 0, 0
    screen_knowledge(policy, lines)
    tables = _kg_mapping(store_id, vector_dim)
    apply_schema_policy(engine, tables, SchemaPolicy.CREATE_IF_NECESSARY)
    written = skipped = 0
    # one transaction: the plan's reads, then every DELETE and INSERT (a failing row rolls
    # back the rows before it, which a batch per transaction left written)
    with engine.begin() as conn:
        plan = _kg_plan(conn, tables, store_id, vector_dim, lines, on_conflict)
        for table, pk, rows, keys, present in plan:
            fresh = [(ln, r) for (ln, r), k in zip(rows, keys) if k not in present or on_conflict == "replace"]
            skipped += len(rows) - len(fresh)
            for start in range(0, len(fresh), batch_size):
                slice_ = fresh[start:start + batch_size]
                try:
                    if on_conflict == "replace":
                        for _, r in slice_:
                            conn.execute(sa.delete(table).where(*[c == r[c.name] for c in pk]))
                    conn.execute(table.insert(), [r for _, r in slice_])
                except sa.exc.StatementError as exc:
                    first, last = min(ln.lineno for ln, _ in slice_), max(ln.lineno for ln, _ in slice_)
                    where = f"line {first}" if first == last else f"lines {first}-{last}"
                    cause = _one_line(exc.orig) if exc.orig is not None else type(exc).__name__
                    raise JSONLError(f"{where}: knowledge row(s) of {_kg_suffix(table.name, store_id)} cannot be "
                                     f"written: {cause}; no knowledge row was written: fix the row or leave it out") from None
                written += len(slice_)
    return written, skipped


# ----------------------------------------------------------------------------- erasure log (SC-14)
#: The key of an erasure-log line: ``{"erasure_log": {receipt}}`` (a receipt with salted
#: hashes only, as :func:`oramem.trust.erasure.erasure_log` returns it).
ERASURE_KEY = "erasure_log"


def _erasure_line(obj: dict, where: str, lineno: int) -> ImportLine:
    from .trust.erasure import check_entry

    if set(obj) != {ERASURE_KEY} or not isinstance(obj[ERASURE_KEY], dict):
        raise JSONLError(f"{where}: an erasure-log line is {{\"{ERASURE_KEY}\": {{receipt}}}} and nothing else")
    try:
        check_entry(obj[ERASURE_KEY])
    except (ValueError, TypeError) as exc:
        raise JSONLError(f"{where}: {_one_line(exc)}") from None
    return ImportLine(lineno, "erasure_log", {"entry": obj[ERASURE_KEY]})


def export_erasure_log(store: Any, write: Callable[[str], Any]) -> int:
    """Write the store's erasure log (SC-14.3) as lines; returns how many (0 on an engine
    without one)."""
    from .errors import CapabilityError
    from .trust.erasure import erasure_log

    try:
        entries = erasure_log(store)
    except CapabilityError:
        return 0
    for entry in entries:
        write(json.dumps({ERASURE_KEY: entry}, ensure_ascii=False, sort_keys=True) + "\n")
    return len(entries)


def line_scopes(lines: Sequence[ImportLine]) -> tuple[set[str], set[str]]:
    """The user and agent ids the lines would write (records, profiles, threads, knowledge rows)."""
    users: set[str] = set()
    agents: set[str] = set()
    for ln in lines:
        f = ln.fields.get("row") if ln.record_type == "kg_row" else ln.fields
        if not isinstance(f, dict):
            continue
        for key, bucket in (("user_id", users), ("agent_id", agents)):
            if isinstance(f.get(key), str):
                bucket.add(f[key])
        if ln.record_type == "user_profile" and isinstance(f.get("id"), str):
            users.add(f["id"])
        elif ln.record_type == "agent_profile" and isinstance(f.get("id"), str):
            agents.add(f["id"])
    return users, agents


def check_erased(store: Any, lines: Sequence[ImportLine], *, allow_erased: bool = False, what: str = "the import",
                 store_log: bool = True) -> None:
    """SC-14.4: refuse lines of a subject erased in ``store`` (its log) or in the lines' own
    erasure log, before anything is written."""
    if allow_erased:
        return
    from .errors import CapabilityError
    from .trust.erasure import erasure_log, refuse_erased

    entries = [ln.fields["entry"] for ln in lines if ln.record_type == "erasure_log"]
    if store_log and store is not None:
        try:
            entries += erasure_log(store)
        except CapabilityError:
            pass
    if entries:
        users, agents = line_scopes(lines)
        refuse_erased(entries, users, agents, what=what)


def merge_erasure_log(store: Any, lines: Sequence[ImportLine]) -> int:
    """Add the lines' erasure-log receipts to the store's log (those it already has are kept)."""
    from .trust.erasure import merge_log

    entries = [ln.fields["entry"] for ln in lines if ln.record_type == "erasure_log"]
    return merge_log(store, entries) if entries else 0
