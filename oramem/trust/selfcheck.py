"""Memory self-tests on the user's own database (issue 27 item 4, SC-16.8 to SC-16.10):
``oramem audit check`` / :func:`self_check`, for a CI job.

Read-only: no probe record is written, and the probes' own searches are not audit entries.
Checks (each a :class:`CheckResult`; the report fails when one of them fails):

- ``cross_user.scope``: for every user B present in the store, every read surface scoped to B
  (``list`` of every scoped record type with ``user_id=B`` — threads and profiles ignore
  scope filters, SC-3.3; ``search`` with ``user_id=B``, queried with
  up to 5 record texts of every other user; over the first 50 users, sorted) returns no
  record of another user;
- ``cross_user.placement``: no record in B's scope carries another present user's id — as a
  metadata value, or in its text as a whole word when the id looks like an identifier (6+
  characters with a digit, ``-``, ``_``, ``@`` or ``.``; plain first names are not matched, so
  "Bob" in Alice's notes is not a finding);
- ``cross_user.knowledge`` (when the knowledge layer exists): for every agent and user B, the
  facts read as B (``get_all``) are B's or the agent's shared ones;
- ``stale.records``: a record past its TTL is not returned by ``get`` (sampled: up to 200);
- ``stale.audit``: no retrieval-audit entry is older than the audit's ``ttl_days``;
- ``knowledge.superseded``: no fact that a later fact of its own scope supersedes is still
  current (no ``valid_to``, not invalidated);
- ``erasure.receipts``: every erasure receipt re-verifies (:func:`verify_receipts`).
- ``knowledge.contradictions``: no active ``contradiction`` observation (found by the
  knowledge layer's consolidation, KC-6) still stands between two or more current facts
  (neither retracted, superseded nor expired): an unresolved contradiction;
Not checked (said, not hidden): contradictions the layer never recorded (finding them needs a
model call), and ``get`` by id (it is not scoped by user: SC-3.1).
SQLite only; another engine raises ``CapabilityError``.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any, Iterable, Optional

from . import audit

__all__ = ["CheckResult", "SelfCheckReport", "self_check"]

_ID_LIKE = re.compile(r"^(?=.*[0-9\-_@.]).{6,}$")
_SAMPLE = 200
_QUERIES_PER_USER = 5
_MAX_PROBE_USERS = 50  # search probes grow with the square of the users


@dataclass
class CheckResult:
    name: str
    ok: bool
    checked: int = 0
    problems: list[str] = field(default_factory=list)
    note: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "ok": self.ok, "checked": self.checked, "problems": list(self.problems), "note": self.note}


@dataclass
class SelfCheckReport:
    checks: list[CheckResult]

    @property
    def ok(self) -> bool:
        return all(c.ok for c in self.checks)

    @property
    def failures(self) -> list[CheckResult]:
        return [c for c in self.checks if not c.ok]

    def to_json(self) -> dict[str, Any]:
        return {"ok": self.ok, "checks": [c.to_json() for c in self.checks]}


def _result(name: str, checked: int, problems: list[str], note: str = "") -> CheckResult:
    problems = list(dict.fromkeys(problems))  # one line per distinct finding
    return CheckResult(name, not problems, checked, problems[:50] + ([f"... {len(problems) - 50} more"] if len(problems) > 50 else []), note)


def _strings(value: Any) -> Iterable[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _strings(v)
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _strings(v)


def _rows(store: Any, sql: str, params: tuple = ()) -> list[tuple]:
    engine = audit._engine(store)
    with engine._read("self-check") as (conn, tables, _):
        return conn.execute(sql.format(records=tables.records), params).fetchall()


def _users(store: Any) -> list[str]:
    return [r[0] for r in _rows(store, "SELECT DISTINCT user_id FROM {records} WHERE user_id IS NOT NULL ORDER BY user_id")]


def _check_scope(store: Any, users: list[str]) -> CheckResult:
    from ..types import SCOPED_TYPES

    problems: list[str] = []
    probes = 0
    probed = users[:_MAX_PROBE_USERS]
    samples = {u: [r[0] for r in _rows(store, "SELECT content FROM {records} WHERE user_id = ? AND content IS NOT NULL "
                                       "AND record_type <> 'thread' ORDER BY seq LIMIT ?", (u, _QUERIES_PER_USER))]
               for u in probed}
    for b in users:
        for record_type in sorted(SCOPED_TYPES):  # threads and profiles ignore scope filters (SC-3.3)
            probes += 1
            for rec in store.list(record_type, limit=None, user_id=b):
                if rec.user_id is not None and rec.user_id != b:
                    problems.append(f"list({record_type}) as user {b!r} returned record {rec.id} of user {rec.user_id!r}")
        for a in probed:
            if a == b or b not in samples:
                continue
            for text in samples[a]:
                probes += 1
                for rec, _ in store.search(text[:2000], k=20, user_id=b):
                    if rec.user_id is not None and rec.user_id != b:
                        problems.append(f"search as user {b!r} (query: a record text of user {a!r}) returned record {rec.id} of user {rec.user_id!r}")
    note = "" if len(users) <= _MAX_PROBE_USERS else f"search probes over the first {_MAX_PROBE_USERS} of {len(users)} users; list covers all"
    return _result("cross_user.scope", probes, problems, note)


def _check_placement(store: Any, users: list[str]) -> CheckResult:
    problems: list[str] = []
    idlike = [u for u in users if _ID_LIKE.match(u)]
    checked = 0
    for seq_id, rtype, owner, content, metadata in _rows(
            store, "SELECT id, record_type, user_id, content, metadata FROM {records} WHERE user_id IS NOT NULL"):
        checked += 1
        others = [u for u in users if u != owner]
        values = set(_strings(json.loads(metadata))) if metadata else set()
        words = set(re.findall(r"[\w\-@.]+", content)) if content else set()
        for other in others:
            if other in values:
                problems.append(f"{rtype} {seq_id} in the scope of user {owner!r} carries the id of user {other!r} in its metadata")
            elif other in idlike and other in words:
                problems.append(f"{rtype} {seq_id} in the scope of user {owner!r} names the id of user {other!r} in its text")
    return _result("cross_user.placement", checked, problems)


def _kg_table(store: Any, name: str) -> Optional[str]:
    table = f"{store.memory_store_id.upper()}_KG_{name}"
    found = _rows(store, "SELECT name FROM sqlite_master WHERE type = 'table' AND name = ?", (table,))
    return table if found else None


def _check_knowledge_scope(store: Any) -> Optional[CheckResult]:
    fact = _kg_table(store, "FACT")
    if fact is None:
        return None
    from ..knowledge import KnowledgeMemory

    pairs = _rows(store, f'SELECT DISTINCT agent_id, user_id FROM "{fact}" WHERE user_id IS NOT NULL')
    agents = sorted({a for a, _ in pairs})
    users = sorted({u for _, u in pairs})
    problems: list[str] = []
    checked = 0
    with KnowledgeMemory(store, None) as km:
        for agent in agents:
            for b in users:
                checked += 1
                for f in km.get_all(agent, limit=1000, include_inactive=True, user_id=b):
                    if f.user_id is not None and f.user_id != b:
                        problems.append(f"knowledge get_all as user {b!r} (agent {agent!r}) returned fact {f.fact_id} of user {f.user_id!r}")
    return _result("cross_user.knowledge", checked, problems)


def _parse(value: Any) -> Optional[datetime]:
    if value is None:
        return None
    if isinstance(value, datetime):
        out = value
    else:
        try:
            out = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
        except ValueError:
            return None
    return out if out.tzinfo else out.replace(tzinfo=timezone.utc)


def _check_stale_records(store: Any, now: datetime) -> CheckResult:
    rows = _rows(store, "SELECT record_type, id, expires_at FROM {records} WHERE expires_at IS NOT NULL "
                 "AND record_type <> 'thread' ORDER BY expires_at LIMIT ?", (_SAMPLE * 5,))
    expired = [(t, i) for t, i, e in rows if (when := _parse(e)) is not None and when <= now][:_SAMPLE]
    problems = [f"{t} {i} is past its TTL and still returned by get" for t, i in expired if store.get(t, i) is not None]
    return _result("stale.records", len(expired), problems)


def _check_stale_audit(store: Any, now: datetime) -> CheckResult:
    settings = audit.audit_settings(store)
    if settings.ttl_days is None:
        return _result("stale.audit", 0, [], "no audit TTL set")
    cutoff = now - timedelta(days=settings.ttl_days)
    old = audit.find(store, until=cutoff)
    problems = [f"{len(old)} retrieval-audit entries are older than ttl_days={settings.ttl_days}; run `oramem purge`"] if old else []
    return _result("stale.audit", len(old), problems)


def _check_superseded(store: Any, now: datetime) -> Optional[CheckResult]:
    fact = _kg_table(store, "FACT")
    if fact is None:
        return None
    rows = _rows(store, f'SELECT o.id, o.valid_to, o.invalidated_at, n.id FROM "{fact}" n JOIN "{fact}" o '
                 "ON o.id = n.supersedes_fact_id AND o.agent_id = n.agent_id "
                 "AND (o.user_id = n.user_id OR (o.user_id IS NULL AND n.user_id IS NULL))")
    problems = []
    for old_id, valid_to, invalidated_at, new_id in rows:
        closed = (_parse(valid_to) or now + timedelta(days=1)) <= now or (_parse(invalidated_at) or now + timedelta(days=1)) <= now
        if not closed:
            problems.append(f"fact {old_id} is superseded by {new_id} and still current")
    return _result("knowledge.superseded", len(rows), problems)


def _check_contradictions(store: Any, now: datetime) -> Optional[CheckResult]:
    fact, obs = _kg_table(store, "FACT"), _kg_table(store, "META_OBSERVATION")
    if fact is None or obs is None:
        return None
    rows = _rows(store, f'SELECT id, agent_id, user_id, supporting_fact_ids FROM "{obs}" '
                 "WHERE observation_type = 'contradiction' AND is_active = 1")
    problems = []
    for obs_id, agent_id, user_id, fact_ids in rows:
        try:
            ids = [i for i in json.loads(fact_ids or "[]") if isinstance(i, str)]
        except ValueError:
            ids = []
        current = []
        for fid in dict.fromkeys(ids):
            found = _rows(store, f'SELECT valid_to, invalidated_at, ingested_at, ttl_days FROM "{fact}" '
                          "WHERE id = ? AND agent_id = ?", (fid, agent_id))
            if not found:
                continue
            valid_to, invalidated_at, ingested_at, ttl_days = found[0]
            ends = [_parse(valid_to), _parse(invalidated_at)]
            if ttl_days is not None and (ingested := _parse(ingested_at)) is not None:
                ends.append(ingested + timedelta(days=int(ttl_days)))
            if all(end is None or end > now for end in ends):
                current.append(fid)
        if len(current) >= 2:
            problems.append(f"contradiction {obs_id} (agent {agent_id!r}, user {user_id!r}) between current facts "
                            f"{', '.join(current)} is unresolved")
    return _result("knowledge.contradictions", len(rows), problems)


def _check_receipts(store: Any) -> CheckResult:
    from .erasure import verify_receipts

    checks = verify_receipts(store)
    problems = [f"receipt {c.receipt_id} ({c.subject} erased {c.erased_at}): {c.problem}" for c in checks if not c.ok]
    return _result("erasure.receipts", len(checks), problems)


def self_check(store: Any, *, now: Optional[datetime] = None) -> SelfCheckReport:
    """Run every check on ``store`` (read-only) and return the report (``.ok``, ``.to_json()``)."""
    audit._engine(store)
    now = now or datetime.now(timezone.utc)
    with audit.internal():  # the probes' searches are not audit entries
        users = _users(store)
        checks = [_check_scope(store, users), _check_placement(store, users)]
        knowledge = _check_knowledge_scope(store)
        if knowledge is not None:
            checks.append(knowledge)
        checks += [_check_stale_records(store, now), _check_stale_audit(store, now)]
        superseded = _check_superseded(store, now)
        if superseded is not None:
            checks.append(superseded)
        contradictions = _check_contradictions(store, now)
        if contradictions is not None:
            checks.append(contradictions)
        checks.append(_check_receipts(store))
    return SelfCheckReport(checks)
