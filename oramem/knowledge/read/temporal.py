"""KC-5.2: the time range a query names ("last week", "in March", "em maio", ...), resolved in
the configured timezone; facts outside it are not retrieved (``View.trange``)."""

from __future__ import annotations

import calendar
import re
import zoneinfo
from datetime import datetime, timedelta, tzinfo
from typing import Optional

from ..text import norm, to_utc

__all__ = ["temporal_range"]

_MONTHS = {
    **{calendar.month_name[i].lower(): i for i in range(1, 13)},
    **{calendar.month_abbr[i].lower(): i for i in range(1, 13)},
    "janeiro": 1, "fevereiro": 2, "marco": 3, "abril": 4, "maio": 5, "junho": 6, "julho": 7, "agosto": 8,
    "setembro": 9, "outubro": 10, "novembro": 11, "dezembro": 12,
}


def _month_start(y: int, m: int, tz: tzinfo) -> datetime:
    return datetime(y, m, 1, tzinfo=tz)


def _next_month(y: int, m: int) -> tuple[int, int]:
    return (y + 1, 1) if m == 12 else (y, m + 1)


def temporal_range(query: str, now: datetime, tz_name: str = "UTC") -> Optional[tuple[datetime, datetime]]:
    """KC-5.3: a half-open UTC range resolved in ``tz_name`` from today/hoje, yesterday/ontem,
    this/last week|month|year (semana passada, mês passado, ano passado, esta semana, este
    mês, este ano), ``in <Month> <YYYY>``, ``in|em <YYYY>``, ``YYYY-MM-DD`` and ``N days
    ago`` / ``há N dias``; None when the query names no time."""
    tz = zoneinfo.ZoneInfo(tz_name)
    local = to_utc(now).astimezone(tz)
    today = datetime(local.year, local.month, local.day, tzinfo=tz)
    q = norm(query)

    def utc(a: datetime, b: datetime) -> tuple[datetime, datetime]:
        return to_utc(a), to_utc(b)

    m = re.search(r"\b(\d{4})-(\d{2})-(\d{2})\b", q)
    if m:
        try:
            d = datetime(int(m.group(1)), int(m.group(2)), int(m.group(3)), tzinfo=tz)
            return utc(d, d + timedelta(days=1))
        except ValueError:
            pass
    m = re.search(r"\b(?:in|em)\s+([a-z]+)\s+(?:de\s+|of\s+)?(\d{4})\b", q)
    if m and m.group(1) in _MONTHS:
        y, mo = int(m.group(2)), _MONTHS[m.group(1)]
        return utc(_month_start(y, mo, tz), _month_start(*_next_month(y, mo), tz))
    m = re.search(r"\b(?:in|em)\s+(\d{4})\b", q)
    if m:
        y = int(m.group(1))
        return utc(datetime(y, 1, 1, tzinfo=tz), datetime(y + 1, 1, 1, tzinfo=tz))
    m = re.search(r"\b(\d{1,4})\s+days?\s+ago\b", q) or re.search(r"\bha\s+(\d{1,4})\s+dias?\b", q)
    if m:
        d = today - timedelta(days=int(m.group(1)))
        return utc(d, d + timedelta(days=1))
    if re.search(r"\b(yesterday|ontem)\b", q):
        return utc(today - timedelta(days=1), today)
    if re.search(r"\b(today|hoje)\b", q):
        return utc(today, today + timedelta(days=1))
    week0 = today - timedelta(days=today.weekday())
    if re.search(r"\blast week\b|\bsemana passada\b", q):
        return utc(week0 - timedelta(days=7), week0)
    if re.search(r"\bthis week\b|\besta semana\b", q):
        return utc(week0, week0 + timedelta(days=7))
    if re.search(r"\blast month\b|\bmes passado\b", q):
        y, mo = (local.year - 1, 12) if local.month == 1 else (local.year, local.month - 1)
        return utc(_month_start(y, mo, tz), _month_start(local.year, local.month, tz))
    if re.search(r"\bthis month\b|\beste mes\b", q):
        return utc(_month_start(local.year, local.month, tz), _month_start(*_next_month(local.year, local.month), tz))
    if re.search(r"\blast year\b|\bano passado\b", q):
        return utc(datetime(local.year - 1, 1, 1, tzinfo=tz), datetime(local.year, 1, 1, tzinfo=tz))
    if re.search(r"\bthis year\b|\beste ano\b", q):
        return utc(datetime(local.year, 1, 1, tzinfo=tz), datetime(local.year + 1, 1, 1, tzinfo=tz))
    return None


# ----------------------------------------------------------------------------- visibility
