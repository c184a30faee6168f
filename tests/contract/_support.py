"""Small helpers shared by the contract tests."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any, Iterable, Optional

import numpy as np

DIM = 64
UTC = timezone.utc


def vec(*weights: tuple[int, float] | int, dim: int = DIM) -> list[float]:
    """A unit vector: ``vec(3)`` is the basis vector e3; ``vec((0, 1.0), (1, 0.5))`` mixes."""
    v = np.zeros(dim, dtype=np.float64)
    for w in weights:
        if isinstance(w, tuple):
            v[w[0]] += w[1]
        else:
            v[w] += 1.0
    v /= np.linalg.norm(v)
    return [float(x) for x in v]


def ids(records: Iterable[Any]) -> list[str]:
    return [r.id for r in records]


def hit_ids(results: Iterable[tuple[Any, float]]) -> list[str]:
    return [r.id for r, _ in results]


def snapshot(store: Any, record_types: Iterable[str] = ("message", "memory", "fact", "guideline", "preference", "user_profile", "agent_profile")) -> dict:
    """Everything readable through ``list``: used to prove a rejected call changed nothing."""
    out = {}
    for t in record_types:
        out[t] = [
            (r.id, r.content, r.thread_id, r.user_id, r.agent_id, r.timestamp, _freeze(r.metadata), r.expires_at)
            for r in store.list(t, limit=None)
        ]
    return out


def _freeze(value: Any) -> Any:
    if isinstance(value, dict):
        return tuple(sorted((k, _freeze(v)) for k, v in value.items()))
    if isinstance(value, list):
        return tuple(_freeze(v) for v in value)
    return value


def parse_ts(value: Optional[str]) -> Optional[datetime]:
    """Parse an ISO-8601 string from a record (naive read as UTC)."""
    if value is None:
        return None
    dt = datetime.fromisoformat(value.replace("Z", "+00:00"))
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    return dt


def close_to(a: datetime, b: datetime, seconds: float = 2.0) -> bool:
    return abs((a - b).total_seconds()) <= seconds


class FakeClock:
    """An injectable, settable UTC clock (SQLite ``clock=``)."""

    def __init__(self, start: datetime) -> None:
        self.now = start

    def __call__(self) -> datetime:
        return self.now


class CountingEmbedder:
    """Duck-typed IEmbedder wrapping another embedder and counting embedded texts."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.texts: list[str] = []

    @property
    def embedding_dimension(self) -> int:
        return self.inner.embedding_dimension

    def embed(self, texts, *, is_query: bool = False):
        self.texts.extend(texts)
        return self.inner.embed(texts, is_query=is_query)

    async def embed_async(self, texts, *, is_query: bool = False):
        return self.embed(texts, is_query=is_query)


def marker_word(n: int) -> str:
    """A letters-only word unique to record number ``n`` ("mkaabx"), for tests that check
    whose text a result carries. The final "x" keeps the word whole under the porter stemmer
    of SQLite's default keyword language ("mkaay" and "mkaai" both stem to "mkaai")."""
    letters = ""
    for _ in range(3):
        n, r = divmod(n, 26)
        letters = chr(ord("a") + r) + letters
    return "mk" + letters + "x"


def expired_peer_world(store: Any) -> None:
    """SC-13.3 with SC-5.4: Bob's only record in ``t1`` is expired and not purged (expired at
    insert: a TIMESTAMP anchor years back, so any engine); Alice wrote there and the agent
    answered her, quoting her. In ``t2`` Bob's record is live: a shared thread."""
    store.add(["bob was here once"], "message", record_ids="b1", thread_ids="t1", user_ids="bob", roles="user",
              timestamps="2020-01-01T00:00:00", ttl_days=1, ttl_anchor="timestamp")
    store.add(["my passport is in the drawer"], "message", record_ids="a1", thread_ids="t1", user_ids="alice",
              roles="user", ttl_days=None)
    store.add(["noted, your passport is in the drawer"], "message", record_ids="r1", thread_ids="t1",
              agent_ids="desk", roles="assistant", ttl_days=None)
    store.add(["bob's ticket"], "message", record_ids="b2", thread_ids="t2", user_ids="bob", roles="user",
              ttl_days=None)
    store.add(["alice in bob's ticket"], "message", record_ids="a2", thread_ids="t2", user_ids="alice",
              roles="user", ttl_days=None)
    store.add(["reply in bob's ticket"], "message", record_ids="r2", thread_ids="t2", agent_ids="desk",
              roles="assistant", ttl_days=None)


#: the two ways to erase a user (SC-8.6 and the SC-8.2 profile cascade), for parametrized tests
ERASE_USER_WAYS = ("forget", "profile cascade")


def erase_user(store: Any, user_id: str, how: str) -> None:
    """Erase ``user_id`` the way ``how`` (one of :data:`ERASE_USER_WAYS`) names."""
    if how == "forget":
        store.forget(user_id=user_id)
    elif how == "profile cascade":
        store.delete("user_profile", user_id, cascade=True)
    else:
        raise ValueError(f"how must be one of {ERASE_USER_WAYS}, got {how!r}")
