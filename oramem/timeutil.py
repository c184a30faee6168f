"""The one ISO-8601 module: how oramem reads and writes every instant it stores.

Parsing (:func:`parse_iso`) accepts what :meth:`datetime.fromisoformat` accepts, plus a
trailing ``Z``/``z`` for UTC on every Python version; a naive value is taken in ``naive``
(UTC unless the caller says otherwise). Every caller words its own error message.

Two stored text formats exist and must not change (the stores' SQL compares them as
strings, so each column keeps one fixed-width format):

- :func:`store_text` — records of the store (``created_at``, ``timestamp``, ``expires_at``)
  and the SQLite engine: UTC, microseconds, ``+00:00``, e.g. ``2026-01-31T12:00:00.000000+00:00``;
- :func:`knowledge_text` — the knowledge layer's time columns on SQLite and its metadata:
  UTC, microseconds, ``Z``, e.g. ``2026-01-31T12:00:00.000000Z``.
"""

from __future__ import annotations

from datetime import datetime, timezone, tzinfo
from typing import Optional

__all__ = ["UTC", "to_utc", "parse_iso", "try_parse_iso", "store_text", "knowledge_text"]

UTC = timezone.utc


def to_utc(moment: datetime, naive: tzinfo = UTC) -> datetime:
    """``moment`` as an aware UTC datetime; a naive one is taken in ``naive``."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=naive)
    return moment.astimezone(UTC)


def parse_iso(text: str, naive: tzinfo = UTC) -> datetime:
    """ISO-8601 ``text`` (surrounding blanks ignored, ``Z`` = UTC) as an aware datetime in
    the offset it names (``naive`` when it names none; :func:`to_utc` converts); raises
    ``ValueError`` (without a message of its own) when it is not ISO-8601."""
    text = text.strip()
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    moment = datetime.fromisoformat(text)
    return moment.replace(tzinfo=naive) if moment.tzinfo is None else moment


def try_parse_iso(text: str, naive: tzinfo = UTC) -> Optional[datetime]:
    """:func:`parse_iso`, or None when ``text`` is not ISO-8601."""
    try:
        return parse_iso(text, naive)
    except ValueError:
        return None


def store_text(moment: datetime) -> str:
    """The store's time text: UTC, microseconds, ``+00:00`` (naive = UTC). ``ValueError``
    when the instant leaves the years 1-9999 once converted to UTC."""
    try:
        return to_utc(moment).isoformat(timespec="microseconds")
    except OverflowError:
        raise ValueError(f"{moment.isoformat()} is outside the years 1-9999 once converted to UTC") from None


def knowledge_text(moment: datetime) -> str:
    """The knowledge layer's time text: UTC, microseconds, ``Z`` (naive = UTC)."""
    return to_utc(moment).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
