"""``oramem.chunking.keyword_passages`` (the Oracle engine's grouping, sent as each chunk's
``keyword_text``) against the SQLite engine's ``StoreTables.keyword_rows`` (the same rule in
SQL) over random records: both must cut the same passages with the same texts, keyed by the
same first row (docs/store-decisions.md, "Keyword rows are passages")."""

from __future__ import annotations

import random
from contextlib import closing

import pytest

from oramem.chunking import KEYWORD_ROW_CHARS, keyword_passages
from oramem.sqlite._sqlite import sqlite3
from oramem.sqlite.schema import StoreTables

_ALPHABET = "abcdefghij klmnop\u00e9\u00fc\u4e2d\u6587 \U0001f600."


def _random_text(rng: random.Random) -> str:
    # never empty: no chunker writes an empty row (a blank text has no chunks), and
    # SQLite's windowed group_concat returns "\x00", not "", for a group of one empty string
    size = rng.choice([1, 5, 60, 300, 700, 1999, 2000, 2001, 2500])
    return "".join(rng.choice(_ALPHABET) for _ in range(rng.randint(1, size)))


def _sqlite_rows(records: list[list[str]], group_chars: int) -> dict[int, dict[int, str]]:
    """record -> {chunk_index of the passage's first row: passage text}, by the SQLite SQL."""
    t = StoreTables("DIFF")
    with closing(sqlite3.connect(":memory:")) as conn:
        for sql in t.base_ddl():
            conn.execute(sql)
        for seq, texts in enumerate(records, start=1):
            conn.execute(f"INSERT INTO {t.records} (seq, record_type, id, created_at) VALUES (?, 'memory', ?, 'x')",
                         (seq, f"r{seq}"))
            for index, text in enumerate(texts):
                conn.execute(f"INSERT INTO {t.chunks} (record_seq, chunk_index, text) VALUES (?, ?, ?)",
                             (seq, index, text))
        rows = conn.execute(
            f"SELECT k.record_seq, c.chunk_index, k.text FROM ({t.keyword_rows('1', group_chars)}) k "
            f"JOIN {t.chunks} c ON c.chunk_id = k.chunk_id").fetchall()
    out: dict[int, dict[int, str]] = {}
    for seq, index, text in rows:
        out.setdefault(seq, {})[index] = text
    return out


def _python_rows(records: list[list[str]], group_chars: int) -> dict[int, dict[int, str]]:
    out: dict[int, dict[int, str]] = {}
    for seq, texts in enumerate(records, start=1):
        for index, passage in enumerate(keyword_passages(texts, group_chars)):
            if passage is not None:
                out.setdefault(seq, {})[index] = passage
    return out


@pytest.mark.parametrize("group_chars", [KEYWORD_ROW_CHARS, 1, 7, 500])
def test_keyword_passages_equal_the_sqlite_engines_keyword_rows(group_chars):
    rng = random.Random(23 + group_chars)
    records = [[_random_text(rng) for _ in range(rng.randint(1, 14))] for _ in range(120)]
    assert _python_rows(records, group_chars) == _sqlite_rows(records, group_chars)


def test_a_passage_starts_where_a_row_starts_in_a_new_stretch():
    # starts 0, 1500, 2600, 3900, 4100: stretches 0, 0, 1, 1, 2
    texts = ["a" * 1500, "b" * 1100, "c" * 1300, "d" * 200, "e" * 10]
    assert keyword_passages(texts, 2000) == [
        "a" * 1500 + " " + "b" * 1100, None, "c" * 1300 + " " + "d" * 200, None, "e" * 10]
    assert keyword_passages(["short"], 2000) == ["short"]
    assert keyword_passages([], 2000) == []


@pytest.mark.parametrize("bad", [0, -1, 2.5, True, None])
def test_keyword_passages_refuses_a_bad_group_size(bad):
    with pytest.raises(ValueError, match="group_chars"):
        keyword_passages(["x"], bad)
