"""Stored time values: ISO-8601 UTC text with a ``+00:00`` offset and microsecond
precision, so that SQL compares instants by comparing strings, and the expiry arithmetic
of the SQLite engine (SC-5.2, SC-5.3, SC-7.6)."""

from __future__ import annotations

import datetime as _dt
from typing import Optional

from .. import timeutil
from ..requests import TTLSpec
from ..types import TimeToLiveAnchor

__all__ = ["iso", "parse_iso", "expiry", "epoch_micros", "NEVER_MICROS"]

_UTC = _dt.timezone.utc
_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_UTC)
#: Sentinel for "never expires" in microsecond arrays (larger than any real instant).
NEVER_MICROS = 2**62


def iso(moment: _dt.datetime) -> str:
    """The stored text of an aware datetime (naive is taken as UTC)."""
    return timeutil.store_text(moment)


def parse_iso(text: str, what: str) -> _dt.datetime:
    """Parse stored or normalised ISO-8601 text; ``ValueError`` naming ``what``."""
    try:
        if not isinstance(text, str):
            raise ValueError
        return timeutil.parse_iso(text)
    except ValueError:
        raise ValueError(f"{what} {text!r} is not an ISO-8601 timestamp") from None


def epoch_micros(text: Optional[str]) -> int:
    """Microseconds since the epoch of stored text; ``None`` = never (a huge value)."""
    if text is None:
        return NEVER_MICROS
    delta = parse_iso(text, "stored time") - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def expiry(ttl: Optional[TTLSpec], created_at: str, timestamp: Optional[str], record: str) -> Optional[str]:
    """The ``expires_at`` text of a record, or None when it never expires.

    ``record`` names the record in error messages. A TIMESTAMP anchor needs an event
    timestamp; the store checks this for inserts, the engine for updates that fall back
    to the stored event time."""
    if ttl is None or ttl.days is None:
        return None
    if ttl.anchor == TimeToLiveAnchor.TIMESTAMP:
        if timestamp is None:
            raise ValueError(
                f"ttl_anchor=TIMESTAMP needs an event timestamp, but {record} has none; "
                "pass timestamp=... in the same call or use TimeToLiveAnchor.CREATED_AT"
            )
        start = parse_iso(timestamp, f"the event timestamp of {record}")
    else:
        start = parse_iso(created_at, f"the creation time of {record}")
    try:
        return iso(start + _dt.timedelta(days=ttl.days))
    except OverflowError:
        raise ValueError(f"ttl_days={ttl.days} puts the expiry of {record} past the year 9999") from None
