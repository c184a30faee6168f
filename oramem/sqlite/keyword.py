"""Keyword search over FTS5 (SC-6.4 KEYWORD) and the fusion of HYBRID (:class:`HybridConfig`).

Query text is only ever words: it is split into runs of letters/digits, each run is
wrapped in double quotes (an FTS5 string, so ``AND``, ``NEAR``, ``*``, ``:``, ``-``,
parentheses and quotes lose any meaning), and the terms are joined with ``OR``. A record
matches when any term occurs in one of its retrieval rows; bm25 ranks rows with more and
rarer terms higher, so partial matches are still found but full matches come first.

Keyword language (a store setting, :data:`KEYWORD_LANGUAGES`):

- ``english`` (the default): the FTS5 ``porter`` tokenizer over ``unicode61`` (diacritics
  folded), so "peanut" matches "peanuts" and "running" matches "runs"; English stopwords
  ("what", "do", "I", ...) are dropped from the query, unless the query has nothing else
  (then every word is kept, so "AND" still finds "and so on").
- ``none``: ``unicode61`` with diacritics folded, no stemming, no stopwords; for text
  that is not English.
- ``legacy``: stores of schema version 1 that were opened without upgrading them
  (``unicode61``, no stemming); their queries keep every word.

Distance = 1 / (1 + s) with ``s = −bm25`` (≥ 0): an absolute mapping into (0, 1], so
distances are comparable across queries and a weak match is not promoted to 0 just
because it is the best one.

Scope inside the index (schema version 3): each FTS row also carries a ``scope`` column
of three tokens, one per scope dimension, ``xt<hex>0`` (thread), ``xu<hex>0`` (user),
``xa<hex>0`` (agent), where ``<hex>`` is the hex of the UTF-8 bytes of the record's
effective scope value (a profile is in its own actor's scope, SC-6.2), and ``xtn0`` /
``xun0`` / ``xan0`` stand for no value. Hex is injective and a token ending in a digit
passes the porter stemmer unchanged, so a token matches exactly the records of that
scope value. A scoped search ANDs the scope tokens into the MATCH (``text : (terms) AND
scope : "xu…0"``), so FTS5 only ever visits and ranks the rows of the scope, and bm25
gives the scope column weight 0, so the ranking is that of the text alone.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, Callable, Optional, Sequence, Union

__all__ = [
    "DEFAULT_KEYWORD_LANGUAGE",
    "FUSION_MODES",
    "DEFAULT_FUSION",
    "HybridConfig",
    "KEYWORD_LANGUAGES",
    "LEGACY_LANGUAGE",
    "check_language",
    "fts_query",
    "fuse",
    "query_terms",
    "split_match",
    "word_phrase",
    "keyword_distance",
    "match_expression",
    "scope_tokens_sql",
    "tokenizer",
]

_WORD = re.compile(r"[^\W_]+", re.UNICODE)

# Function words of English that carry no topic: pronouns, auxiliaries, articles,
# prepositions, conjunctions, question words and a few fillers of chat questions.
_ENGLISH_STOPWORDS = frozenset(
    """
    a about above after again against all am an and any are aren as at be because been before being below
    between both but by can cannot could couldn did didn do does doesn doing don down during each few for from
    further had hadn has hasn have haven having he her here hers herself him himself his how i if in into is
    isn it its itself just let ll me might more most mustn my myself no nor not now of off on once only or other
    ought our ours ourselves out over own re s same shan she should shouldn so some such t than that the their
    theirs them themselves then there these they this those through to too under until up ve very was wasn we
    were weren what when where which while who whom why will with won would wouldn you your yours yourself
    yourselves d m o y also ever get got tell told know remember please thing things something anything
    """.split()
)

#: keyword language -> (FTS5 tokenizer, query stopwords)
KEYWORD_LANGUAGES: dict[str, tuple[str, frozenset[Any]]] = {
    "english": ("porter unicode61 remove_diacritics 2", _ENGLISH_STOPWORDS),
    "none": ("unicode61 remove_diacritics 2", frozenset()),
}
LEGACY_LANGUAGE = "legacy"
_LEGACY: tuple[str, frozenset[Any]] = ("unicode61", frozenset())
DEFAULT_KEYWORD_LANGUAGE = "english"


def check_language(language: object, what: str = "keyword_language") -> str:
    """A valid keyword language name (lower-cased), else a ``ValueError`` naming the choices."""
    if not isinstance(language, str):
        raise TypeError(f"{what} must be a str (one of {sorted(KEYWORD_LANGUAGES)}), got {type(language).__name__}")
    name = language.strip().lower()
    if name not in KEYWORD_LANGUAGES:
        raise ValueError(f"{what} {language!r} is not supported; use one of {sorted(KEYWORD_LANGUAGES)}")
    return name


def _spec(language: str) -> tuple[str, frozenset[Any]]:
    return _LEGACY if language == LEGACY_LANGUAGE else KEYWORD_LANGUAGES[language]


def tokenizer(language: str) -> str:
    """The FTS5 ``tokenize`` option of a keyword language (a fixed string, never user text)."""
    return _spec(language)[0]


def query_terms(text: str, language: str = DEFAULT_KEYWORD_LANGUAGE) -> list[str]:
    """The words a keyword search looks for: lower-cased, each once, in query order,
    without the language's stopwords (unless the text has nothing else)."""
    terms = list(dict.fromkeys(word.lower() for word in _WORD.findall(text)))
    stopwords = _spec(language)[1]
    return [term for term in terms if term not in stopwords] or terms


def _any_of(terms: Sequence[str]) -> str:
    return " OR ".join(f'"{term}"' for term in terms)


def fts_query(text: str, language: str = DEFAULT_KEYWORD_LANGUAGE) -> Optional[str]:
    """An FTS5 MATCH expression for plain words, or None when the text has no word."""
    terms = query_terms(text, language)
    return _any_of(terms) if terms else None


#: scope dimension -> token prefix in the FTS ``scope`` column
_SCOPE_PREFIX = {"thread": "xt", "user": "xu", "agent": "xa"}


def scope_tokens_sql(alias: str = "r") -> str:
    """SQL expression (over the records table aliased ``alias``) of a record's scope
    tokens; the effective user/agent of a profile is its own id (SC-6.2)."""
    columns = {
        "thread": f"{alias}.thread_id",
        "user": f"CASE WHEN {alias}.record_type = 'user_profile' THEN {alias}.id ELSE {alias}.user_id END",
        "agent": f"CASE WHEN {alias}.record_type = 'agent_profile' THEN {alias}.id ELSE {alias}.agent_id END",
    }
    parts = [
        f"CASE WHEN ({column}) IS NULL THEN '{prefix}n0' ELSE '{prefix}' || hex({column}) || '0' END"
        for prefix, column in ((_SCOPE_PREFIX[name], column) for name, column in columns.items())
    ]
    return " || ' ' || ".join(parts)


def scope_token(dimension: str, value: Optional[str]) -> str:
    """The token of one scope value (None = no value), as :func:`scope_tokens_sql` writes it."""
    prefix = _SCOPE_PREFIX[dimension]
    return f"{prefix}n0" if value is None else f"{prefix}{value.encode('utf-8').hex()}0"


def match_expression(
    text: str, language: str = DEFAULT_KEYWORD_LANGUAGE, scopes: Sequence[tuple[str, Optional[str]]] = (),
    scoped_index: bool = True,
) -> Optional[str]:
    """The MATCH expression of a keyword search: the query words (:func:`fts_query`), and
    on an index with a ``scope`` column, restricted to that column's text and ANDed with
    the tokens of ``scopes`` (``(dimension, value or None)`` pairs). None when the text
    has no word."""
    terms = query_terms(text, language)
    return _match(terms, scopes, scoped_index) if terms else None


def word_phrase(term: str, scoped_index: bool) -> str:
    """The MATCH phrase of one query word: in the text column on an index with a scope
    column, anywhere on an older one."""
    return f'text : "{term}"' if scoped_index else f'"{term}"'


def _match(terms: Sequence[str], scopes: Sequence[tuple[str, Optional[str]]], scoped_index: bool) -> str:
    if not scoped_index:
        return _any_of(terms)
    parts = [f"text : ({_any_of(terms)})"] + [f'scope : "{scope_token(d, v)}"' for d, v in scopes]
    return " AND ".join(parts)


#: FTS5's bm25 gives a phrase found in at least half of the index's rows the floor IDF
#: 1e-6 (``fts5_aux.c``: ``if( idf<=0.0 ) idf = 1e-6``), and a phrase's share of a row's
#: score is ``idf · f · (k1 + 1) / (f + k1 · (1 − b + b · D / avgdl))`` < ``idf · (k1 + 1)``
#: with k1 = 1.2; this bounds what one such phrase adds to any row (with room for rounding)
COMMON_TERM_BOUND = 1e-6 * 2.2 * 1.001


@dataclass(frozen=True)
class SplitMatch:
    """A keyword search whose terms include common ones (found in at least half of the
    index's rows: bm25 weighs each at most :data:`COMMON_TERM_BOUND`) and rare ones.

    ``full`` is the search's MATCH expression with the common terms first. Every row it
    matches that holds a rare term is matched by exactly one of ``with_common`` (a common
    and a rare term) and ``without_common`` (a rare term, no common one), and both give it
    the bm25 score ``full`` gives it, to the bit: the same phrases with the same IDFs (FTS5
    counts each phrase's rows over the whole index), the phrases that hold no instance in
    the row add exactly 0, and the rest are summed in the same order. The rows only
    ``full`` matches hold common terms alone and score less than ``bound``."""

    full: str
    with_common: str
    without_common: str
    bound: float
    #: whether the rows holding a rare term can fill the search's window (else the search
    #: scores every match with ``full`` at once)
    worth_trying: bool = True


def split_match(
    terms: Sequence[str], common: Sequence[str], scopes: Sequence[tuple[str, Optional[str]]], scoped_index: bool,
) -> SplitMatch:
    """:class:`SplitMatch` of ``terms`` (query order) of which ``common`` are the common
    ones (a non-empty proper subset)."""
    common_set = set(common)
    commons = [term for term in terms if term in common_set]
    rares = [term for term in terms if term not in common_set]
    if not commons or not rares:
        raise ValueError("split_match needs both common and rare terms")
    scope_parts = [f'scope : "{scope_token(d, v)}"' for d, v in scopes] if scoped_index else []

    def words(group: Sequence[str]) -> str:
        return f"text : ({_any_of(group)})" if scoped_index else f"({_any_of(group)})"

    rare_in_scope = " AND ".join([words(rares)] + scope_parts)
    return SplitMatch(
        full=_match(commons + rares, scopes if scoped_index else (), scoped_index),
        with_common=" AND ".join([words(commons), words(rares)] + scope_parts),
        without_common=f"({rare_in_scope}) NOT {words(commons)}",
        bound=COMMON_TERM_BOUND * len(commons),
    )


def may_be_scope_token(term: str) -> bool:
    """Whether a query word could equal a scope token (``xt…``, ``xu…``, ``xa…``): such a
    word may be counted in the scope column too, so it is never treated as common."""
    return term[:2] in ("xt", "xu", "xa")


#: score fusion: the vector leg's reference rank (its similarity there maps to 0)
VECTOR_REFERENCE_RANK = 20
#: score fusion: the default keyword weight (vector weight 1.0), at full strength
KEYWORD_WEIGHT_SCORE = 3.0
#: score fusion: the keyword leg counts from a best match this many standard deviations
#: above the leg's mean score, fully from KEYWORD_Z_FLOOR + KEYWORD_Z_SPAN
KEYWORD_Z_FLOOR = 1.5
KEYWORD_Z_SPAN = 2.0


def keyword_distance(bm25: float) -> float:
    score = max(0.0, -float(bm25))
    return 1.0 / (1.0 + score)


#: fusion rules of :class:`HybridConfig` (the first is the default)
FUSION_MODES = ("gated-rrf", "score", "rrf")
DEFAULT_FUSION = FUSION_MODES[0]
#: gated-rrf: the default keyword weight (vector weight 1.0) at full strength, and rrf_k
KEYWORD_WEIGHT_GATED = 3.0
RRF_K_GATED = 1.0
#: gated-rrf: its keyword strength gate opens from z = GATED_Z_FLOOR, fully at
#: GATED_Z_FLOOR + GATED_Z_SPAN (a softer gate than the score rule's)
GATED_Z_FLOOR = 1.5
GATED_Z_SPAN = 4.0
#: the strength gate reads the keyword leg's first this many matches (best first): the leg
#: is max(10 k, 200) deep, so a z over the whole leg made the gate, and with it a search's
#: top ranks, depend on k; 200 is the depth of a search for k <= 20 (the rule was tuned on
#: 200-deep legs, bench/fusion_tune.py)
GATE_SAMPLE = 200
#: gated-rrf: the keyword gate also weighs how many of the query's words the keyword leg's
#: first record holds (:func:`coverage_factor`): one counts nothing, this many (or all of a
#: shorter query's) count in full (issue 23: chosen over paraphrase, memories, keyed,
#: long-text and dev-full at once, bench/results/fusion.md)
GATED_COVERAGE_FULL = 4
#: default keyword weight per fusion rule (chosen in bench/fusion_tune.py, bench/results/fusion.md)
_DEFAULT_KEYWORD_WEIGHT = {"gated-rrf": KEYWORD_WEIGHT_GATED, "score": KEYWORD_WEIGHT_SCORE, "rrf": 0.7}
_DEFAULT_RRF_K = {"gated-rrf": RRF_K_GATED, "score": 10.0, "rrf": 10.0}


@dataclass(frozen=True)
class HybridConfig:
    """How HYBRID search fuses its VECTOR and KEYWORD legs.

    ``fusion="gated-rrf"`` (the default, issue 23): weighted reciprocal-rank fusion whose
    keyword weight is gated by how strongly the keyword leg's best match stands out. Score
    ``vector_weight / (rrf_k + vector rank) + gate * keyword_weight / (rrf_k + keyword
    rank)`` (a leg that did not return a record adds 0), distance ``1 - score / ((vector_weight
    + gate * keyword_weight) / (rrf_k + 1))``; defaults keyword weight
    ``KEYWORD_WEIGHT_GATED`` (3.0), ``rrf_k`` ``RRF_K_GATED`` (1). The gate in [0, 1] is
    :func:`keyword_scores`' strength gate with its own constants: ``(z - GATED_Z_FLOOR) /
    GATED_Z_SPAN`` clamped (1.5, 4.0), ``z = (s_top - mean) / std`` over the keyword leg's
    bm25 scores; fewer than
    two keyword matches, or matches that share one everyday word about equally, give a gate
    near 0 and the vector ranking as it is (the guard for a keyword leg that found nothing
    distinctive, F-3); a best match that stands far out gives gate 1, and the keyword
    ranking leads with the vector leg's ranks breaking its near-ties and lifting records
    both legs found. The gate is then multiplied by :func:`coverage_factor` of the keyword
    leg's first record: 0 when it holds one of the query's words, in full from
    ``GATED_COVERAGE_FULL`` (4) words or all of a shorter query's (the store counts them
    with the keyword index's own tokenizer). With ``vector_weight=0``, or a vector leg that
    returned nothing, the gate is 1 (the keyword ranking as it is). Chosen
    over the score rule by the worst margin over four sets at once, the coverage factor
    over five (``bench/results/fusion.md``).

    ``fusion="score"``: relative score fusion (the default of issue 23's first round), as
    Oracle's DBMS_HYBRID_VECTOR ``RSF`` fuses scores rather than ranks. Each leg's scores
    are put on one scale for the query: the vector leg's cosine similarity relative to its
    best candidate and its ``VECTOR_REFERENCE_RANK``-th (``(cos - cos_ref) / (cos_top -
    cos_ref)``, clamped to [0, 1]), the keyword leg's bm25 relative to its best match
    (``bm25 / bm25_top``). The keyword weight times the same strength gate. A record's
    score is ``vector_weight * v + gate * keyword_weight * k`` (a leg that did not return it
    adds 0), its distance ``1 - score / (vector_weight + gate * keyword_weight)``.

    ``fusion="rrf"``: weighted reciprocal-rank fusion without a gate, the rule before issue
    23: score ``vector_weight / (rrf_k + vector_rank) + keyword_weight / (rrf_k +
    keyword_rank)``.

    - ``vector_weight`` / ``keyword_weight`` (≥ 0, not both 0); ``keyword_weight=None``
      takes the rule's default (gated-rrf 3.0, score ``KEYWORD_WEIGHT_SCORE`` 3.0, rrf 0.7).
    - ``rrf_k`` (> 0): for ``gated-rrf`` (default 1) and ``rrf`` (default 10); ``None`` =
      the rule's default; ``score`` refuses any other value than its placeholder 10.
    - ``depth``: how many candidates each leg contributes (≥ k always); ``None`` =
      ``max(10 * k, 200)``.

    Equal fused distances are ordered by record type, then id (SC-6.1), never by which leg
    was computed first."""

    vector_weight: float = 1.0
    keyword_weight: Optional[float] = None
    rrf_k: Optional[float] = None
    depth: Optional[int] = None
    fusion: str = DEFAULT_FUSION

    def __post_init__(self) -> None:
        if not isinstance(self.fusion, str) or self.fusion not in FUSION_MODES:
            raise ValueError(f"HybridConfig.fusion must be one of {', '.join(FUSION_MODES)}, got {self.fusion!r}")
        if self.keyword_weight is None:
            object.__setattr__(self, "keyword_weight", _DEFAULT_KEYWORD_WEIGHT[self.fusion])
        given_rrf_k = self.rrf_k
        if self.rrf_k is None:
            object.__setattr__(self, "rrf_k", _DEFAULT_RRF_K[self.fusion])
        for name in ("vector_weight", "keyword_weight", "rrf_k"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                raise ValueError(f"HybridConfig.{name} must be a finite number, got {value!r}")
        assert self.keyword_weight is not None and self.rrf_k is not None
        if self.vector_weight < 0 or self.keyword_weight < 0 or self.vector_weight + self.keyword_weight == 0:
            raise ValueError("HybridConfig weights must be >= 0 and not both 0 (use strategy='vector' or 'keyword')")
        if self.rrf_k <= 0:
            raise ValueError(f"HybridConfig.rrf_k must be > 0, got {self.rrf_k!r}")
        if self.fusion == "score" and given_rrf_k is not None and given_rrf_k != _DEFAULT_RRF_K["score"]:
            raise ValueError(f"HybridConfig.rrf_k={given_rrf_k!r} applies to fusion='gated-rrf' or 'rrf' only; "
                             "pass one of those or drop rrf_k")
        if self.depth is not None and (isinstance(self.depth, bool) or not isinstance(self.depth, int) or self.depth < 1):
            raise ValueError(f"HybridConfig.depth must be a positive int or None, got {self.depth!r}")

    def fusion_depth(self, k: int) -> int:
        return max(k, self.depth) if self.depth is not None else max(10 * k, 200)


Leg = Sequence[Union[int, tuple[int, float]]]


def _pairs(leg: Leg, what: str, need_distance: bool) -> list[tuple[int, Optional[float]]]:
    out: list[tuple[int, Optional[float]]] = []
    for item in leg:
        if isinstance(item, tuple):
            out.append((item[0], float(item[1])))
        elif need_distance:
            raise TypeError(f"score fusion needs ({what} key, distance) pairs, got a bare key {item!r}")
        else:
            out.append((item, None))
    return out


def fuse(vector: Leg, keyword: Leg, config: HybridConfig = HybridConfig(),
         coverage: Optional[Callable[[], tuple[int, int]]] = None) -> list[tuple[int, float]]:
    """Fuse two legs, each best first: ``(key, distance)`` pairs (the vector leg's cosine
    distances, the keyword leg's :func:`keyword_distance`), or bare keys for ``rrf``.

    ``coverage`` (gated-rrf): returns ``(held, terms)``, how many of the query's ``terms``
    words the keyword leg's first record holds (:func:`coverage_factor`); called only when
    the strength gate is open and both legs have records. None: no such gate (legs alone,
    as ``bench/fusion_tune.py`` replays them).

    Returns ``(key, distance)`` with distance in [0, 1], nearest first (the caller orders
    equal distances by record type and id); see :class:`HybridConfig` for the rules."""
    if config.fusion == "rrf":
        return _fuse_rrf([k for k, _ in _pairs(vector, "vector", False)], [k for k, _ in _pairs(keyword, "keyword", False)],
                         config)
    if config.fusion == "gated-rrf":
        keyword_pairs = _pairs(keyword, "keyword", True)
        # the guard: with no vector weight, or a vector leg that returned nothing, the
        # keyword ranking is all there is and counts in full
        vector_keys = [k for k, _ in _pairs(vector, "vector", False)]
        gate = (1.0 if config.vector_weight == 0 or not vector_keys
                else keyword_scores(keyword_pairs, GATED_Z_FLOOR, GATED_Z_SPAN)[1])
        if 0.0 < gate and coverage is not None and config.vector_weight != 0 and vector_keys and keyword_pairs:
            gate *= coverage_factor(*coverage())
        return _fuse_rrf(vector_keys, [k for k, _ in keyword_pairs], config, gate)
    return _fuse_scores(_pairs(vector, "vector", True), _pairs(keyword, "keyword", True), config)


def vector_scores(leg: Sequence[tuple[int, Optional[float]]]) -> dict[int, float]:
    """The vector leg on [0, 1]: ``(cos - cos_ref) / (cos_top - cos_ref)`` clamped, where
    ``cos_ref`` is the similarity at rank :data:`VECTOR_REFERENCE_RANK` (or the last)."""
    if not leg:
        return {}
    sims = [1.0 - float(d or 0.0) for _, d in leg]
    top = sims[0]
    ref = sims[min(VECTOR_REFERENCE_RANK, len(sims)) - 1]
    span = top - ref
    if span <= 1e-9:
        return {key: 1.0 if sim >= top - 1e-12 else 0.0 for (key, _), sim in zip(leg, sims)}
    return {key: min(1.0, max(0.0, (sim - ref) / span)) for (key, _), sim in zip(leg, sims)}


def keyword_scores(leg: Sequence[tuple[int, Optional[float]]], z_floor: Optional[float] = None,
                   z_span: Optional[float] = None) -> tuple[dict[int, float], float]:
    """The keyword leg on [0, 1] (bm25 relative to the best match: ``s / s_top`` with ``s =
    1 / distance - 1``, the inverse of :func:`keyword_distance`) and its strength gate in
    [0, 1]: ``(z - KEYWORD_Z_FLOOR) / KEYWORD_Z_SPAN`` clamped, where ``z`` is how far the
    best match stands out from the leg's first :data:`GATE_SAMPLE` matches (``(s_top - mean) /
    std``; the sample does not grow with k, so neither does the gate). A match
    on one everyday word, which many records share about equally, has a small ``z``; a
    match on several rare words has a large one. Fewer than two matches: gate 0.
    ``z_floor`` / ``z_span``: other gate constants (gated-rrf passes its own)."""
    raw = [(key, max(0.0, 1.0 / max(float(d or 1.0), 1e-12) - 1.0)) for key, d in leg]
    top = max((s for _, s in raw), default=0.0)
    if top <= 0.0:
        return {}, 0.0
    values = [s for _, s in raw[:GATE_SAMPLE]]  # best first: the same sample whatever the leg's depth
    mean = sum(values) / len(values)
    std = math.sqrt(sum((v - mean) ** 2 for v in values) / len(values))
    z = (top - mean) / std if std > 0 else 0.0
    floor = KEYWORD_Z_FLOOR if z_floor is None else z_floor
    span = KEYWORD_Z_SPAN if z_span is None else z_span
    gate = min(1.0, max(0.0, (z - floor) / span))
    return {key: s / top for key, s in raw}, gate


def coverage_factor(held: int, terms: int) -> float:
    """gated-rrf's second gate, in [0, 1]: how far the keyword leg's first record can be
    trusted for how many of the query's ``terms`` words it holds (``held``). A match on one
    word is no evidence, however rare the word (F-3: one everyday word shared with the
    question lifted a wrong memory over a strong semantic match); each further word adds
    an equal share up to :data:`GATED_COVERAGE_FULL` words, or all of a shorter query's:
    ``(held - 1) / (min(GATED_COVERAGE_FULL, terms) - 1)`` clamped. A one-word query gives 0."""
    if terms < 2 or held < 2:
        return 0.0
    return min(1.0, (held - 1) / (min(GATED_COVERAGE_FULL, terms) - 1))


def _fuse_scores(vector: list[Any], keyword: list[Any], config: HybridConfig) -> list[tuple[int, float]]:
    wv, wk = float(config.vector_weight), float(config.keyword_weight or 0.0)
    nv = vector_scores(vector) if wv > 0 else {}
    nk, gate = keyword_scores(keyword) if wk > 0 else ({}, 0.0)
    if wv == 0:
        gate = 1.0  # keyword only: the keyword ranking as it is
    wk *= gate
    total = wv + wk
    if total <= 0:
        return [(key, 1.0) for key, _ in vector]
    fused = []
    for key in dict.fromkeys([k for k, _ in vector] + [k for k, _ in keyword]):
        score = wv * nv.get(key, 0.0) + wk * nk.get(key, 0.0)
        fused.append((key, min(1.0, max(0.0, round(1.0 - score / total, 12)))))
    fused.sort(key=lambda item: item[1])
    return fused


def _fuse_rrf(vector: Sequence[int], keyword: Sequence[int], config: HybridConfig,
              gate: Optional[float] = None) -> list[tuple[int, float]]:
    """Weighted reciprocal-rank fusion; distance = 1 − score / best, where best is the
    score of a key ranked first by both legs. ``gate`` (gated-rrf) scales the keyword
    weight; the keyword leg's records stay candidates (score 0 from it) when it is 0, as
    they are in the FULL OUTER JOIN of the PL/SQL twin."""
    assert config.keyword_weight is not None and config.rrf_k is not None
    rrf_k = float(config.rrf_k)
    keyword_weight = config.keyword_weight if gate is None else config.keyword_weight * gate
    weights = ((config.vector_weight, vector), (keyword_weight, keyword))
    scores: dict[int, float] = {}
    for weight, ranking in weights:
        if weight == 0 and gate is None:
            continue
        for rank, key in enumerate(ranking, start=1):
            scores[key] = scores.get(key, 0.0) + weight / (rrf_k + rank)
    top = sum(weight for weight, _ in weights) / (rrf_k + 1)
    # rounding would leave a key ranked first by both legs a hair above 0
    fused = [(key, min(1.0, max(0.0, round(1.0 - score / top, 12)))) for key, score in scores.items()]
    fused.sort(key=lambda item: item[1])
    return fused
