"""oramem.timeutil: the one ISO-8601 parser, and the two stored formats, byte for byte as the
store, the SQLite engine and the knowledge layer wrote them before the module existed."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from zoneinfo import ZoneInfo

import pytest

from oramem import timeutil
from oramem.knowledge import text as ktext
from oramem.normalize import format_time, parse_timestamp
from oramem.sqlite import timefmt

PARIS = ZoneInfo("Europe/Paris")


def test_store_format_is_unchanged():
    moment = datetime(2026, 1, 31, 13, 0, 0, 5, tzinfo=timezone(timedelta(hours=1)))
    expected = "2026-01-31T12:00:00.000005+00:00"
    assert timeutil.store_text(moment) == expected
    assert format_time(moment) == timefmt.iso(moment) == expected
    assert parse_timestamp("2026-01-31T12:00:00.000005Z", "t") == expected
    assert parse_timestamp("2026-01-31 13:00:00.000005+01:00", "t") == expected
    assert parse_timestamp(datetime(2026, 1, 31, 12, 0, 0, 5), "t") == expected  # naive = UTC
    assert parse_timestamp("2026-01-31", "t") == "2026-01-31T00:00:00.000000+00:00"


def test_knowledge_format_is_unchanged():
    moment = datetime(2026, 7, 1, 14, 30, tzinfo=PARIS)
    assert timeutil.knowledge_text(moment) == ktext.iso(moment) == "2026-07-01T12:30:00.000000Z"
    assert ktext.iso(None) is None


def test_one_parser_everywhere():
    expected = datetime(2026, 1, 31, 12, 0, tzinfo=timezone.utc)
    for text in ("2026-01-31T12:00:00Z", "2026-01-31T12:00:00z", " 2026-01-31T13:00:00+01:00 ", "2026-01-31T12:00:00"):
        assert timeutil.to_utc(timeutil.parse_iso(text)) == expected
        assert ktext.parse_when(text, "t") == expected
        assert timefmt.parse_iso(text.strip(), "t") == expected
    # naive text in a given zone (the LLM's dates in the configured timezone)
    assert timeutil.to_utc(timeutil.parse_iso("2026-07-01T14:30", PARIS)) == datetime(2026, 7, 1, 12, 30, tzinfo=timezone.utc)
    assert timeutil.try_parse_iso("next tuesday") is None


def test_each_caller_keeps_its_error():
    with pytest.raises(ValueError, match=r"timestamps='soon' is not an ISO-8601 date/time"):
        parse_timestamp("soon", "timestamps")
    with pytest.raises(ValueError, match=r"stored time 'soon' is not an ISO-8601 timestamp"):
        timefmt.parse_iso("soon", "stored time")
    with pytest.raises(ValueError, match=r"occurred_at must be a datetime or an ISO-8601 string"):
        ktext.parse_when("soon", "occurred_at")
    with pytest.raises(ValueError, match="outside the years 1-9999"):
        parse_timestamp("0001-01-01T00:00:00+05:00", "t")
