"""Keyword search over FTS5 (SC-6.4 KEYWORD) and reciprocal-rank fusion (HYBRID).

The user's text is only ever words: it is split into runs of letters/digits, each run is
wrapped in double quotes (an FTS5 string, so ``AND``, ``NEAR``, ``*``, ``:``, ``-``,
parentheses and quotes lose any meaning), and the terms are joined with ``OR``. A record
matches when any term occurs in one of its retrieval rows; bm25 ranks rows with more and
rarer terms higher, so partial matches are still found but full matches come first.

Distance = 1 − s / (1 + s) = 1 / (1 + s) with ``s = −bm25`` (≥ 0): an absolute mapping
into (0, 1], so distances are comparable across queries and a weak match is not promoted
to 0 just because it is the best one.
"""

from __future__ import annotations

import re
from typing import Optional

__all__ = ["fts_query", "keyword_distance", "fuse", "RRF_K"]

_WORD = re.compile(r"[^\W_]+", re.UNICODE)
#: The usual reciprocal-rank-fusion constant.
RRF_K = 60


def fts_query(text: str) -> Optional[str]:
    """An FTS5 MATCH expression for plain words, or None when the text has no word."""
    terms = list(dict.fromkeys(word.lower() for word in _WORD.findall(text)))
    if not terms:
        return None
    return " OR ".join(f'"{term}"' for term in terms)


def keyword_distance(bm25: float) -> float:
    score = max(0.0, -float(bm25))
    return 1.0 / (1.0 + score)


def fuse(*rankings: list[int]) -> list[tuple[int, float]]:
    """Reciprocal-rank fusion of rankings (lists of record keys, best first).

    Returns ``(key, distance)`` with distance = 1 − rrf / rrf_max in [0, 1], where rrf_max
    is the score of a key ranked first in every ranking; nearest first (ties in input
    order; the caller breaks them by record type and id)."""
    scores: dict[int, float] = {}
    for ranking in rankings:
        for rank, key in enumerate(ranking, start=1):
            scores[key] = scores.get(key, 0.0) + 1.0 / (RRF_K + rank)
    best = len(rankings) / (RRF_K + 1)
    fused = [(key, min(1.0, max(0.0, 1.0 - score / best))) for key, score in scores.items()]
    fused.sort(key=lambda item: item[1])
    return fused
