"""Verifiable erasure (issue 27 item 1, SC-14): ``forget`` receipts, the erasure log, and
the refusal of erased subjects on import, migrate and restore.

A receipt is what ``store.forget`` / ``KnowledgeMemory.forget`` return: an
:class:`ErasureReceipt`, a ``dict`` of rows erased per table (what ``forget`` returned
before, so ``counts["...records"]``, ``.items()`` and ``json.dumps`` keep working) with
attributes: ``receipt_id``, ``erased_at``, ``subject`` (``"user"``/``"agent"``),
``subject_hash`` (HMAC-SHA256 of the subject under the store's salt, never the id),
``verification`` (the scan's result) and ``token_hashes`` (salted hashes of the tokens the
scan looked for, kept so the receipt can be re-verified later, :func:`verify_receipts`).

The salt is per store: 16 random bytes created by the first ``forget`` and kept as the
store option ``erasure.salt``. Each receipt carries the salt it was made with, so a
receipt copied into another store (export/import, migrate) is still checked with its own
salt. A salted hash stops a hash from being matched across stores or against a table
computed in advance; it does not stop someone who holds the database (and so the salt)
from testing a guessed id — the log is a tombstone, not an anonymiser.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import hmac
import json
import re
import secrets
import uuid
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Optional, Sequence

from ..errors import Error

__all__ = [
    "SALT_OPTION",
    "LOG_LINE_KEY",
    "MAX_TOKENS",
    "ErasureReceipt",
    "ErasedSubjectError",
    "ReceiptCheck",
    "subject_hash",
    "subject_tokens",
    "erasure_log",
    "erased_subjects",
    "find_erased",
    "refuse_erased",
    "merge_log",
    "check_entry",
    "verify_receipts",
    "verify_receipts_async",
]

SALT_OPTION = "erasure.salt"
#: the key of an erasure-log line in an export file: ``{"erasure_log": {receipt}}``
LOG_LINE_KEY = "erasure_log"
#: the most tokens one scan looks for (the longest first: the most distinctive)
MAX_TOKENS = 256
_WORD = re.compile(r"[^\W_]{4,64}", re.UNICODE)
# common English words: never distinctive of one person
_STOP = frozenset("""
about above after again against also always another anything around because been before being below between
both cannot could does doing done down during each even ever every from further have having here hers herself
himself into itself just know like made make many more most much must myself never only other ought ours
ourselves over really same shall should some such than that their theirs them themselves then there these they
thing things think this those though through under until upon very want well were what when where which while
will with within without would your yours yourself yourselves user agent memory message none null true false
today yesterday tomorrow thanks thank please okay sure yeah role content text metadata
""".split())


class ErasedSubjectError(Error, ValueError):
    """Records of an erased user or agent were about to be written (SC-14.4)."""


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="microseconds")


def subject_hash(salt: str, kind: str, subject_id: str) -> str:
    """HMAC-SHA256 (hex) of ``kind:subject_id`` under ``salt``."""
    return hmac.new(bytes.fromhex(salt), f"{kind}:{subject_id}".encode(), hashlib.sha256).hexdigest()


def _token_hash(salt: str, token: str) -> str:
    return hmac.new(bytes.fromhex(salt), f"token:{token}".encode(), hashlib.sha256).hexdigest()[:24]


def _split(text: str) -> set[str]:
    return {m.group(0).lower() for m in _WORD.finditer(text)}


def subject_tokens(texts: Iterable[str], subject_id: str) -> dict[str, set[bytes]]:
    """The distinctive tokens of the subject's texts (words of 4 or more letters or digits,
    not common English words), at most :data:`MAX_TOKENS` (the longest first), plus her id;
    each with the byte forms a scan looks for (UTF-8 of every surface form, ASCII lower-cased)."""
    forms: dict[str, set[bytes]] = {}
    for text in texts:
        for m in _WORD.finditer(text):
            word = m.group(0)
            token = word.lower()
            if token in _STOP or (token.isdigit() and len(token) < 6):
                continue
            forms.setdefault(token, set()).update({word.encode().lower(), token.encode()})
    chosen = sorted(forms, key=lambda t: (-len(t), t))[:MAX_TOKENS]
    out = {t: forms[t] for t in chosen}
    out[subject_id.lower()] = {subject_id.encode().lower()}
    return out


class ErasureReceipt(dict[str, int]):
    """Rows erased per table (a ``dict``, what ``forget`` always returned) plus the receipt's
    attributes (SC-14.1). ``to_json()`` is the receipt as the log keeps it (no salt)."""

    receipt_id: str
    erased_at: str
    subject: str
    subject_hash: str
    verification: dict[str, Any]
    token_hashes: list[str]
    salt: str

    def __init__(self, rows: Mapping[str, int], *, receipt_id: str, erased_at: str, subject: str, subject_hash: str,
                 verification: Mapping[str, Any], token_hashes: Sequence[str], salt: str) -> None:
        super().__init__({str(k): int(v) for k, v in rows.items()})
        self.receipt_id = receipt_id
        self.erased_at = erased_at
        self.subject = subject
        self.subject_hash = subject_hash
        self.verification = dict(verification)
        self.token_hashes = list(token_hashes)
        self.salt = salt

    @property
    def rows(self) -> dict[str, int]:
        return dict(self)

    @property
    def verified(self) -> bool:
        """The scan ran and found no residue."""
        return self.verification.get("status") == "clean"

    def to_json(self) -> dict[str, Any]:
        """The receipt as printed (``oramem forget --json``): no id, no text, no salt."""
        return {"receipt_id": self.receipt_id, "erased_at": self.erased_at, "subject": self.subject,
                "subject_hash": self.subject_hash, "rows": {t: n for t, n in sorted(self.items()) if n},
                "total": sum(self.values()), "verification": self.verification}

    def log_entry(self) -> dict[str, Any]:
        """What the erasure log keeps: the receipt, the token hashes and the salt they use."""
        entry = self.to_json()
        entry["token_hashes"] = self.token_hashes
        entry["salt"] = self.salt
        return entry

    def __repr__(self) -> str:
        return (f"ErasureReceipt({dict(self)!r}, subject={self.subject!r}, subject_hash={self.subject_hash[:12]}..., "
                f"status={self.verification.get('status')!r})")


# ---------------------------------------------------------------------------- engine parts
class _SQLiteOps:
    """The engine-specific half, on the SQLite engine's own connections and locks."""

    def __init__(self, engine: Any) -> None:
        self.engine = engine

    def ensure_salt(self) -> str:
        from ..options import encode_option
        from ..sqlite.options import read_options, write_option

        with self.engine._write("erasure salt") as tx:
            salt = read_options(tx.conn, tx.tables.store_id).get(SALT_OPTION)
            if not isinstance(salt, str):
                salt = secrets.token_hex(16)
                write_option(tx.conn, tx.tables.store_id, SALT_OPTION, encode_option(SALT_OPTION, salt))
        return salt

    def texts(self, kind: str, subject_id: str) -> list[str]:
        from ..sqlite import erasure as sq

        with self.engine._read("forget") as (conn, tables, _):
            return sq.subject_texts(conn, tables, kind, subject_id)

    def scan(self, needles: dict[str, set[bytes]]) -> dict[str, Any]:
        from ..sqlite import erasure as sq

        with self.engine._read("erasure scan") as (conn, _, _c):
            return sq.scan(conn, self.engine._path, needles)

    def read_log(self) -> list[dict[str, Any]]:
        from ..sqlite import erasure as sq

        with self.engine._read("erasure log") as (conn, tables, _):
            return [json.loads(text) for text in sq.read_log(conn, tables.store_id)]

    def write_log(self, entries: Sequence[Mapping[str, Any]]) -> None:
        from ..sqlite import erasure as sq

        rows = [(e["receipt_id"], e["erased_at"], e["subject_hash"], json.dumps(e, sort_keys=True)) for e in entries]
        with self.engine._write("erasure log") as tx:
            sq.write_log(tx.conn, tx.tables.store_id, rows)

    def live_actors(self, kind: str) -> list[str]:
        from ..sqlite import erasure as sq

        with self.engine._read("erasure check") as (conn, tables, _):
            return sq.subject_in_scope(conn, tables, kind)

    def words(self) -> tuple[list[str], dict[str, set[str]], set[str]]:
        from ..sqlite import erasure as sq

        with self.engine._read("erasure check") as (conn, _, _c):
            scanned, where = sq.file_words(conn, self.engine._path, _split)
            return scanned, where, sq.live_words(conn, _split)


class _OracleOps:
    """The Oracle half (synchronous pool): the log and the scan through oramem_admin
    (log_erasure, get_erasure_log_json, erasure_scan_json), the texts through the store's
    own reads. Static-checked, not run against Oracle."""

    def __init__(self, store: Any) -> None:
        self.store = store
        self.engine = store._engine

    def ensure_salt(self) -> str:
        salt = self.store.get_option(SALT_OPTION)
        if not isinstance(salt, str):
            salt = secrets.token_hex(16)
            self.store.set_option(SALT_OPTION, salt)
        return str(salt)

    def _records(self, **scope: Any) -> list[Any]:
        from ..types import PROFILE_TYPES, RECORD_TYPES

        return [r for t in RECORD_TYPES if t not in PROFILE_TYPES and t != "thread"
                for r in self.store.list(t, limit=None, **scope)]

    def texts(self, kind: str, subject_id: str) -> list[str]:
        from ..sqlite.erasure import _strings

        records = self._records(**{"user_id" if kind == "user" else "agent_id": subject_id})
        profile = self.store.get("user_profile" if kind == "user" else "agent_profile", subject_id)
        out: list[str] = []
        for r in records + ([profile] if profile is not None else []):
            out.extend([r.content] if r.content else [])
            out.extend(_strings(r.metadata or {}))
        return out

    def scan(self, needles: dict[str, set[bytes]]) -> dict[str, Any]:
        result = self.engine._do(self.engine._prepare_erasure_scan(sorted(needles)))
        found = {str(t): list(w) for t, w in dict(result.get("found") or {}).items() if t in needles}
        return {"scanned": list(result.get("scanned") or []), "found": found,
                "shared": {str(t) for t in result.get("shared") or ()}}

    def read_log(self) -> list[dict[str, Any]]:
        return [dict(e) for e in self.engine._do(self.engine._prepare_erasure_log())]

    def write_log(self, entries: Sequence[Mapping[str, Any]]) -> None:
        for e in entries:
            self.engine._do(self.engine._prepare_log_erasure(json.dumps(e, sort_keys=True), True))

    def live_actors(self, kind: str) -> list[str]:
        profile = "user_profile" if kind == "user" else "agent_profile"
        ids = {r.id for r in self.store.list(profile, limit=None)}
        ids.update(getattr(r, f"{kind}_id") for r in self._records() if getattr(r, f"{kind}_id"))
        return sorted(ids)

    def words(self) -> tuple[list[str], dict[str, set[str]], set[str]]:
        # the Oracle log keeps token hashes only and the database offers no byte view: the
        # re-verification checks that the subject is not back (SC-14.5), not her words
        return [], {}, set()


def _ops(store: Any) -> Optional[Any]:
    engine = getattr(store, "_engine", None)
    from ..sqlite.engine import SQLiteEngine

    if isinstance(engine, SQLiteEngine):
        return _SQLiteOps(engine)
    if type(engine).__name__ == "SyncOracleEngine":  # no import: the engines do not import each other
        return _OracleOps(store)
    return None


def _unsupported(store: Any) -> NotImplementedError:
    from ..errors import CapabilityError

    return CapabilityError(  # type: ignore[return-value]
        f"erasure receipts and the erasure log are not supported by the {type(getattr(store, '_engine', store)).__name__} "
        "(SQLite, and Oracle through a synchronous pool: an asynchronous Oracle pool has no forget either)")


# ---------------------------------------------------------------------------- forget
@dataclass
class Plan:
    """What ``forget`` knows before it deletes (the subject's tokens stay in memory only)."""

    kind: str
    salt: str
    subject_hash: str
    receipt_id: str
    erased_at: str
    needles: dict[str, set[bytes]] = field(repr=False)

    def tombstone(self) -> str:
        """The log row written in the erasure's own transaction (verification pending)."""
        return json.dumps({"receipt_id": self.receipt_id, "erased_at": self.erased_at, "subject": self.kind,
                           "subject_hash": self.subject_hash, "salt": self.salt, "rows": {}, "total": 0,
                           "token_hashes": sorted(_token_hash(self.salt, t) for t in self.needles),
                           "verification": {"status": "pending"}}, sort_keys=True)


def prepare(store: Any, kind: str, subject_id: str) -> Optional[Plan]:
    """Before the erasure: salt (created once), the subject's hash and tokens. None when the
    engine keeps no receipts (``forget`` then returns plain counts)."""
    ops = _ops(store)
    if ops is None:
        return None
    salt = ops.ensure_salt()
    store._options = None  # the option cache
    needles = subject_tokens(ops.texts(kind, subject_id), subject_id)
    return Plan(kind, salt, subject_hash(salt, kind, subject_id), uuid.uuid4().hex, _now(), needles)


def finish(store: Any, plan: Optional[Plan], counts: dict[str, int]) -> dict[str, int]:
    """After the erasure committed: the verification scan, the receipt, its log row."""
    if plan is None:
        return counts
    ops = _ops(store)
    assert ops is not None
    result = ops.scan(plan.needles)
    found = result["found"]
    residue = {t: w for t, w in found.items() if t not in result["shared"]}
    verification = {
        "status": "clean" if not residue else "residue",
        "tokens_checked": len(plan.needles),
        "tokens_shared": len(result["shared"]),
        "residue": [{"token": _token_hash(plan.salt, t), "where": sorted(set(w))} for t, w in sorted(residue.items())],
        "scanned": result["scanned"],
        "verified_at": _now(),
    }
    receipt = ErasureReceipt(counts, receipt_id=plan.receipt_id, erased_at=plan.erased_at, subject=plan.kind,
                             subject_hash=plan.subject_hash, verification=verification,
                             token_hashes=sorted(_token_hash(plan.salt, t) for t in plan.needles), salt=plan.salt)
    ops.write_log([receipt.log_entry()])
    return receipt


# ---------------------------------------------------------------------------- the log
def erasure_log(store: Any) -> list[dict[str, Any]]:
    """The store's receipts as the log keeps them (oldest first; salted hashes only)."""
    ops = _ops(store)
    if ops is None:
        raise _unsupported(store)
    result: list[dict[str, Any]] = ops.read_log()
    return result


def erased_subjects(entries: Iterable[Mapping[str, Any]]) -> list[tuple[str, str, str]]:
    """``(kind, salt, subject_hash)`` of each receipt."""
    return [(str(e["subject"]), str(e["salt"]), str(e["subject_hash"])) for e in entries
            if e.get("subject") in ("user", "agent") and e.get("salt") and e.get("subject_hash")]


def find_erased(entries: Iterable[Mapping[str, Any]], user_ids: Iterable[Optional[str]],
                agent_ids: Iterable[Optional[str]]) -> dict[str, set[str]]:
    """Which of ``user_ids`` / ``agent_ids`` the receipts name: ``{"user": {...}, "agent": {...}}``."""
    tombs = erased_subjects(entries)
    out: dict[str, set[str]] = {"user": set(), "agent": set()}
    if not tombs:
        return out
    salts: dict[str, set[str]] = {}
    hashes = {(k, h) for k, _, h in tombs}
    for kind, salt, _ in tombs:
        salts.setdefault(kind, set()).add(salt)
    for kind, ids in (("user", user_ids), ("agent", agent_ids)):
        for sid in {i for i in ids if i}:
            if any((kind, subject_hash(salt, kind, sid)) in hashes for salt in salts.get(kind, ())):
                out[kind].add(sid)
    return out


def refuse_erased(entries: Iterable[Mapping[str, Any]], user_ids: Iterable[Optional[str]],
                  agent_ids: Iterable[Optional[str]], *, what: str, flag: str = "--allow-erased") -> None:
    """SC-14.4: raise :class:`ErasedSubjectError` when the records name an erased subject
    (nothing is written before this is called)."""
    hit = find_erased(entries, user_ids, agent_ids)
    n_users, n_agents = len(hit["user"]), len(hit["agent"])
    if not (n_users or n_agents):
        return
    parts = ([f"{n_users} erased user(s)"] if n_users else []) + ([f"{n_agents} erased agent(s)"] if n_agents else [])
    raise ErasedSubjectError(
        f"{what} holds records of {' and '.join(parts)} (a receipt in the target store's or the "
        f"source's erasure log names them): they were erased (`oramem forget`, or the cascade of their profile), and a copy made before that would "
        f"bring them back. Nothing was "
        f"written. Remove their records from the source, or pass {flag} if restoring them is intended"
    )


def erased_since(store: Any, seen: Iterable[Any], user_ids: Iterable[Optional[str]],
                 agent_ids: Iterable[Optional[str]]) -> dict[str, list[str]]:
    """Which of ``user_ids`` / ``agent_ids`` a receipt of the store's log that is not in
    ``seen`` (receipt ids read before) names while a live record or profile of the store
    still names them: a copy restored them after an erasure that committed while it ran
    (SC-14.4; red26). ``{"user": [...], "agent": [...]}``, empty lists when none."""
    out: dict[str, list[str]] = {"user": [], "agent": []}
    ops = _ops(store)
    if ops is None:
        return out
    known = set(seen)
    late = [e for e in ops.read_log() if e.get("receipt_id") not in known]
    if not late:
        return out
    hit = find_erased(late, user_ids, agent_ids)
    for kind in ("user", "agent"):
        if hit[kind]:
            out[kind] = sorted(hit[kind] & set(ops.live_actors(kind)))
    return out


def merge_log(store: Any, entries: Sequence[Mapping[str, Any]]) -> int:
    """Add receipts (from an export file or another store) to the store's log; a receipt
    already there (same id) is kept. Returns how many were added."""
    ops = _ops(store)
    if ops is None:
        if entries:
            raise _unsupported(store)
        return 0
    have = {e["receipt_id"] for e in ops.read_log()}
    new = [dict(e) for e in entries if e.get("receipt_id") not in have]
    for e in new:
        check_entry(e)
    ops.write_log(new)
    return len(new)


def check_entry(entry: Mapping[str, Any]) -> None:
    for key in ("receipt_id", "erased_at", "subject", "subject_hash", "salt"):
        if not isinstance(entry.get(key), str):
            raise ValueError(f"an erasure-log receipt needs a string {key!r}")
    if entry["subject"] not in ("user", "agent") or not re.fullmatch(r"[0-9a-f]{64}", entry["subject_hash"]):
        raise ValueError("an erasure-log receipt has a bad subject or subject_hash")
    bytes.fromhex(entry["salt"])


# ---------------------------------------------------------------------------- re-verify
@dataclass(frozen=True)
class ReceiptCheck:
    """One receipt re-verified: ``ok`` when the subject has no live record in the store and
    none of her tokens is back in its files or indexes (tokens now in live rows of others
    are counted as shared, not as failures)."""

    receipt_id: str
    erased_at: str
    subject: str
    subject_hash: str
    ok: bool
    subject_present: bool
    residue: tuple[dict[str, Any], ...]
    tokens_checked: int
    tokens_shared: int
    problem: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"receipt_id": self.receipt_id, "erased_at": self.erased_at, "subject": self.subject,
                "subject_hash": self.subject_hash, "ok": self.ok, "subject_present": self.subject_present,
                "residue": list(self.residue), "tokens_checked": self.tokens_checked,
                "tokens_shared": self.tokens_shared, "problem": self.problem}


def verify_receipts(store: Any) -> list[ReceiptCheck]:
    """SC-14.5: re-verify every receipt of the store's erasure log against the store as it
    is now (for ``oramem audit --check``). A receipt fails when a live record names its
    subject again, or a token it hashed is in the files or indexes of the store and in no
    live row. Token matching is by whole word here (the receipt keeps hashes, not tokens)."""
    ops = _ops(store)
    if ops is None:
        raise _unsupported(store)
    entries = ops.read_log()
    if not entries:
        return []
    actors = {"user": ops.live_actors("user"), "agent": ops.live_actors("agent")}
    _, where, live = ops.words()
    out = []
    for e in entries:
        salt = e.get("salt", "")
        kind = e.get("subject", "")
        try:
            present = any(subject_hash(salt, kind, a) == e.get("subject_hash") for a in actors.get(kind, ()))
            wanted = set(e.get("token_hashes") or ())
            hashed_where: dict[str, set[str]] = {}
            shared = 0
            for token, places in where.items():
                h = _token_hash(salt, token)
                if h in wanted:
                    if token in live:
                        shared += 1
                    else:
                        hashed_where.setdefault(h, set()).update(places)
        except (ValueError, TypeError) as exc:
            out.append(ReceiptCheck(str(e.get("receipt_id")), str(e.get("erased_at")), str(kind),
                                    str(e.get("subject_hash")), False, False, (), 0, 0, f"unreadable receipt: {exc}"))
            continue
        residue = tuple({"token": h, "where": sorted(w)} for h, w in sorted(hashed_where.items()))
        problem = "; ".join(p for p in (
            "a live record names the erased subject again" if present else "",
            f"{len(residue)} of her tokens are in the store's files or indexes and in no live row" if residue else "",
        ) if p)
        out.append(ReceiptCheck(e["receipt_id"], e["erased_at"], kind, e["subject_hash"], not problem, present,
                                residue, len(wanted), shared, problem))
    return out


async def verify_receipts_async(store: Any) -> list[ReceiptCheck]:
    """Async twin of :func:`verify_receipts` (runs it in a worker thread: the block's worker
    inside ``async with store.transaction_async()``, SC-12, as the sync twin reads in the block)."""
    return await store.engine._off_loop(verify_receipts, store)
