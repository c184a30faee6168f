"""How the store splits a retrieval text into retrieval rows (SC-4.5).

A chunk never holds more text than the embedder reads (issue 28). The rule is a
:class:`ChunkPolicy`, recorded in the store's settings so that a reopened store chunks
the same way:

- ``unit="tokens"``: for an embedder that says how many of its own tokens it reads per
  input (:attr:`oramem.embedders.base.InputWindow.max_tokens`, e.g. 256 − 2 special tokens
  for all-MiniLM-L6-v2; at most :data:`MAX_CHUNK_TOKENS`): a text of at most ``size`` tokens (and at most ``max_chars``
  characters) is one chunk, kept verbatim; a longer one keeps its first ``size`` tokens as
  its first chunk and is cut into *tail windows* of at most ``tail_size`` tokens (64;
  stores recorded before tail windows: ``size``) and ``max_chars`` characters after it,
  each window starting ``overlap`` tokens before the end of the previous one. Vector
  ranking adds :data:`TAIL_HANDICAP` to the distance of a record's later rows in such a
  store (:func:`tail_handicap`, SC-6.4). Every chunk is re-tokenized and shrunk until it fits,
  so no indexed text lies past the model's window.
- ``unit="chars"``: for an embedder with no tokenizer here (a service with a documented or
  configured limit: a safe character bound derived from its token limit) or none at all
  (``HashEmbedder``: the default 2,000 characters, overlap 200).

The keyword index of a ``tokens`` store ranks passages, not these windows: it gathers a
record's consecutive rows into keyword rows of about :data:`KEYWORD_ROW_CHARS` characters
(:func:`keyword_row_chars`; the SQLite engine's ``StoreTables.keyword_rows``).

Cuts are placed at the last paragraph, sentence or word boundary in the second half of a
window, so words are not split (a single word longer than a window is cut hard). A blank
text (empty or only white space) has no chunks: the record is stored but never found by
search. Caller-owned chunks (a list ``index_texts`` entry) never pass through here.
"""

from __future__ import annotations

import bisect
import json
from dataclasses import dataclass
from typing import Any, Callable, Optional, Sequence

__all__ = [
    "DEFAULT_CHUNK_CHARS",
    "DEFAULT_CHUNK_OVERLAP",
    "TAIL_HANDICAP",
    "ChunkPolicy",
    "chunk_text",
    "chunk_tokens",
    "chunking_identity",
    "keyword_passages",
    "keyword_row_chars",
    "policy_for",
    "policy_of_identity",
    "store_chunker",
    "tail_handicap",
]

DEFAULT_CHUNK_CHARS = 2000
DEFAULT_CHUNK_OVERLAP = 200
#: the largest chunk in tokens, whatever the window: a long window (MiniLM reads 254 word
#: pieces, others 512) diluted by unrelated text ranks a one-sentence fact lower than a
#: short chunk does (all-MiniLM-L6-v2 was trained on 128-token inputs)
MAX_CHUNK_TOKENS = 128
#: the chunks after a long text's first: shorter windows, so a one-sentence fact deep in a
#: long text is a larger share of its chunk (issue 28's test: the passport sentence in the
#: middle of chatter scores 0.25 in a 64-token window, 0.14 in a 128-token one)
TAIL_CHUNK_TOKENS = 64
#: overlap of token windows, as a share of the tail window (8 of 64 tokens)
TOKEN_OVERLAP_SHARE = 8
#: cosine distance added to a record's later retrieval rows (chunk index > 0) when vector
#: search ranks records (SC-6.4): a record counts its first row's distance, or a later
#: row's plus this handicap, whichever is smaller. Without it a long record's many short chunks are many
#: draws at a chance match, and long distractors crowd out whole short answers (issue 28:
#: best-chunk ranking fell below whole-text cosine on the LongMemEval dev set); the facts
#: past the first row stay reachable when they match clearly (bench/results/quality.md)
TAIL_HANDICAP = 0.10
#: keyword rows under a ``tokens`` policy: the keyword index gathers a record's consecutive
#: retrieval rows into rows of about this many characters (those starting in the same
#: stretch of this size), so bm25 ranks passages the size it ranks under the character
#: policy, not the embedder's windows: on the LongMemEval dev set (111 questions) the
#: keyword leg over 128/64-token windows found the evidence first for 0.260 of the
#: questions, over these rows 0.327 (MRR 0.501 -> 0.580; bench/results/quality.md)
KEYWORD_ROW_CHARS = DEFAULT_CHUNK_CHARS

_BOUNDARIES = ("\n\n", ". ", "! ", "? ", "\n", " ")

#: ``spans(text)``: the character offsets ``(start, end)`` of each of the text's tokens,
#: special tokens ([CLS], [SEP], ...) excluded, in order
Spans = Callable[[str], Sequence[tuple[int, int]]]


def chunk_text(text: str, max_chars: int = DEFAULT_CHUNK_CHARS, overlap: int = DEFAULT_CHUNK_OVERLAP) -> list[str]:
    """Split ``text`` into chunks of at most ``max_chars`` characters (see the module docstring)."""
    if max_chars < 1 or not 0 <= overlap < max_chars:
        raise ValueError(f"chunking needs max_chars >= 1 and 0 <= overlap < max_chars, got {max_chars}, {overlap}")
    if not text.strip():
        return []
    if len(text) <= max_chars:
        return [text]
    chunks: list[str] = []
    start, n = 0, len(text)
    while start < n:
        end = min(start + max_chars, n)
        if end < n:
            end = _cut(text, start, end)
        piece = text[start:end].strip()
        if piece:
            chunks.append(piece)
        if end >= n:
            break
        nxt = max(end - overlap, start + 1)
        # begin the next window on a word boundary
        space = text.find(" ", nxt, end)
        start = space + 1 if space != -1 else nxt
    return chunks


def chunk_tokens(text: str, spans: Spans, max_tokens: int, overlap: int,
                 max_chars: int = DEFAULT_CHUNK_CHARS, tail_tokens: Optional[int] = None) -> list[str]:
    """Split ``text`` into chunks of at most ``max_tokens`` tokens (as ``spans`` counts them)
    and at most ``max_chars`` characters, consecutive chunks overlapping by about ``overlap``
    tokens (see the module docstring). ``tail_tokens`` (default ``max_tokens``) bounds the
    chunks after the first: a text of at most ``max_tokens`` tokens stays whole, a longer
    one keeps its first ``max_tokens`` tokens as its first chunk and is cut into
    ``tail_tokens`` windows after it."""
    tail = max_tokens if tail_tokens is None else tail_tokens
    if max_tokens < 1 or not 1 <= tail <= max_tokens or not 0 <= overlap < tail or max_chars < 1:
        raise ValueError(
            f"chunking needs max_tokens >= 1, 1 <= tail_tokens <= max_tokens, 0 <= overlap < tail_tokens "
            f"and max_chars >= 1, got {max_tokens}, {tail_tokens}, {overlap}, {max_chars}"
        )
    if not text.strip():
        return []
    offsets = list(spans(text))
    if len(offsets) <= max_tokens and len(text) <= max_chars:
        return [text]
    if not offsets:  # nothing the tokenizer reads (e.g. only control characters): by characters
        return chunk_text(text, max_chars, min(DEFAULT_CHUNK_OVERLAP, max_chars // 10))
    starts = [s for s, _ in offsets]
    ends = [e for _, e in offsets]
    chunks: list[str] = []
    i, n = 0, len(offsets)
    while i < n:
        size = max_tokens if not chunks else tail
        begin = starts[i]
        j = min(i + size, n)
        hard = starts[j] if j < n else len(text)
        hard = min(hard, begin + max_chars)
        end = hard if hard >= len(text) else _cut(text, begin, hard)
        piece = text[begin:end].strip()
        # the tokenizer may split a text's end differently on its own: shrink until it fits
        while piece and (len(spans(piece)) > size or len(piece) > max_chars):
            end = begin + max(1, (len(piece) * 9) // 10)
            end = _cut(text, begin, end) if end < len(text) else end
            piece = text[begin:end].strip()
        if piece:
            chunks.append(piece)
        covered = bisect.bisect_right(ends, end)  # tokens wholly inside this chunk
        if covered >= n or end >= len(text):
            break
        nxt = max(covered - overlap, i + 1)
        # begin the next window at a word start (a token after white space), if one is near
        for candidate in range(nxt, covered):
            if starts[candidate] == 0 or text[starts[candidate] - 1].isspace():
                nxt = candidate
                break
        i = nxt
    return chunks


def _cut(text: str, start: int, end: int) -> int:
    """The best cut position in ``(start, end]``: after the last boundary in the second
    half of the window, else a hard cut at ``end``."""
    floor = start + (end - start) // 2
    for sep in _BOUNDARIES:
        pos = text.rfind(sep, floor, end)
        if pos != -1:
            return pos + len(sep)
    return end


@dataclass(frozen=True)
class ChunkPolicy:
    """How a store chunks retrieval texts (recorded in its settings, see the module docstring).

    ``tokenizer`` identifies the tokenizer a ``tokens`` policy counts with (a digest of its
    file), so a store can tell that a new embedder counts differently."""

    unit: str = "chars"
    size: int = DEFAULT_CHUNK_CHARS
    overlap: int = DEFAULT_CHUNK_OVERLAP
    max_chars: int = DEFAULT_CHUNK_CHARS
    tokenizer: Optional[str] = None
    #: size of the chunks after a text's first (``tokens`` policies; None: ``size``, the
    #: policy of stores built before the tail windows)
    tail_size: Optional[int] = None

    def __post_init__(self) -> None:
        if self.unit not in ("chars", "tokens"):
            raise ValueError(f"chunk unit must be 'chars' or 'tokens', got {self.unit!r}")
        for name in ("size", "overlap", "max_chars", "tail_size"):
            value = getattr(self, name)
            if name == "tail_size" and value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, int):
                raise ValueError(f"chunk {name} must be an int, got {value!r}")
        tail = self.size if self.tail_size is None else self.tail_size
        if self.size < 1 or not 1 <= tail <= self.size or not 0 <= self.overlap < tail or self.max_chars < 1:
            raise ValueError(
                f"chunking needs size >= 1, 1 <= tail_size <= size, 0 <= overlap < tail_size, max_chars >= 1; got {self}"
            )
        if self.tail_size is not None and self.unit != "tokens":
            raise ValueError(f"tail_size applies to a 'tokens' chunk policy only; got {self}")

    def split(self, text: str, spans: Optional[Spans] = None) -> list[str]:
        """The chunks of ``text``; a ``tokens`` policy needs the embedder's ``spans``."""
        if self.unit == "chars":
            return chunk_text(text, min(self.size, self.max_chars), min(self.overlap, min(self.size, self.max_chars) - 1))
        if spans is None:
            raise ValueError("a token chunk policy needs the embedder's tokenizer (InputWindow.spans)")
        return chunk_tokens(text, spans, self.size, self.overlap, self.max_chars, self.tail_size)

    def to_json(self) -> str:
        data: dict[str, Any] = {"unit": self.unit, "size": self.size, "overlap": self.overlap, "max_chars": self.max_chars}
        if self.tokenizer:
            data["tokenizer"] = self.tokenizer
        if self.tail_size is not None:
            data["tail_size"] = self.tail_size
        return json.dumps(data, sort_keys=True)

    @classmethod
    def from_json(cls, text: Optional[str]) -> "ChunkPolicy":
        """The recorded policy; None (a store from before issue 28) is the old default."""
        if not text:
            return cls()
        return _policy_of(json.loads(text))

    def describe(self) -> str:
        if self.unit == "chars":
            return f"{min(self.size, self.max_chars)} characters, overlap {self.overlap}"
        tail = "" if self.tail_size is None else f", then windows of {self.tail_size} tokens"
        return f"{self.size} tokens (and <= {self.max_chars} characters){tail}, overlap {self.overlap} tokens"


def policy_for(window: Any) -> ChunkPolicy:
    """The chunk policy that fits an embedder's :class:`~oramem.embedders.base.InputWindow`
    (None: the embedder reads any length, e.g. ``HashEmbedder``: the default policy)."""
    if window is None:
        return ChunkPolicy()
    if window.max_tokens is not None and window.spans is not None:
        size = min(int(window.max_tokens), MAX_CHUNK_TOKENS)
        tail = min(size, TAIL_CHUNK_TOKENS)
        return ChunkPolicy("tokens", size, max(0, tail // TOKEN_OVERLAP_SHARE), DEFAULT_CHUNK_CHARS, window.tokenizer,
                           tail_size=tail)
    if window.max_chars is not None:
        size = min(int(window.max_chars), DEFAULT_CHUNK_CHARS)
        return ChunkPolicy("chars", size, min(DEFAULT_CHUNK_OVERLAP, size // 10), DEFAULT_CHUNK_CHARS)
    return ChunkPolicy()


def tail_handicap(identity: Any) -> float:
    """The cosine distance a store with this recorded ``identity`` adds to a record's later
    retrieval rows in vector ranking (SC-6.4): :data:`TAIL_HANDICAP` under a policy with
    tail windows, else 0 (legacy and character policies, stores without an embedder: a
    record counts its best row)."""
    policy = policy_of_identity(identity)
    return TAIL_HANDICAP if policy is not None and policy.tail_size is not None else 0.0


def keyword_row_chars(identity: Any) -> Optional[int]:
    """How the keyword index of a store with this recorded ``identity`` groups a record's
    retrieval rows: :data:`KEYWORD_ROW_CHARS` under a ``tokens`` policy (its windows are
    sized for the embedder, far shorter than the passages bm25 ranks well), else None (one
    keyword row per retrieval row: character policies, whose chunks are passages already,
    legacy stores and stores without an embedder)."""
    policy = policy_of_identity(identity)
    return KEYWORD_ROW_CHARS if policy is not None and policy.unit == "tokens" else None


def keyword_passages(texts: Sequence[str], group_chars: int) -> list[Optional[str]]:
    """The keyword passages of one record's retrieval rows ``texts`` (in chunk order), one
    entry per row: a row whose start (the characters of the record's earlier rows laid end
    to end) lies in another stretch of ``group_chars`` characters than the previous row's
    starts a passage, and carries the passage's text (its rows' texts joined by a space, in
    chunk order); the passage's other rows carry None. The SQLite engine's
    ``StoreTables.keyword_rows`` in SQL (a differential test keeps them equal); the Oracle
    engine sends these as each chunk's ``keyword_text`` (``oramem_store.add_json``)."""
    if isinstance(group_chars, bool) or not isinstance(group_chars, int) or group_chars < 1:
        raise ValueError(f"group_chars must be an int >= 1, got {group_chars!r}")
    out: list[Optional[str]] = [None] * len(texts)
    first = 0           # the current passage's first row
    parts: list[str] = []
    start = 0           # characters of the rows before this one
    for i, text in enumerate(texts):
        if not isinstance(text, str):
            raise TypeError(f"a retrieval row's text must be a str, got {type(text).__name__}")
        if i > 0 and start // group_chars != (start - len(texts[i - 1])) // group_chars:
            out[first] = " ".join(parts)
            first, parts = i, []
        parts.append(text)
        start += len(text)
    if parts:
        out[first] = " ".join(parts)
    return out


def policy_of_identity(identity: Any) -> Optional[ChunkPolicy]:
    """The chunk policy recorded in a store's embedder identity (key ``chunking``), or None
    (a store from before issue 28, or one without an embedder: the legacy policy)."""
    if not isinstance(identity, dict) or not isinstance(identity.get("chunking"), dict):
        return None
    return _policy_of(identity["chunking"])


def _policy_of(data: dict[str, Any]) -> ChunkPolicy:
    tail = data.get("tail_size")
    return ChunkPolicy(unit=data["unit"], size=int(data["size"]), overlap=int(data["overlap"]),
                       max_chars=int(data.get("max_chars", DEFAULT_CHUNK_CHARS)), tokenizer=data.get("tokenizer"),
                       tail_size=None if tail is None else int(tail))


def store_chunker(identity: Any, embedder: Any, legacy_chars: int = DEFAULT_CHUNK_CHARS,
                  legacy_overlap: int = DEFAULT_CHUNK_OVERLAP) -> Callable[[str], list[str]]:
    """How a store with this recorded ``identity`` chunks: its recorded policy, counted with
    the embedder's tokenizer; a ``tokens`` policy with no tokenizer at hand (no embedder:
    keyword rows only) falls back to one character per token, a bound no chunk's token
    count can exceed; no recorded policy: the legacy character chunks (existing stores keep
    chunking as they did until ``oramem reembed`` adopts the new policy)."""
    policy = policy_of_identity(identity)
    if policy is None:
        return lambda text: chunk_text(text, legacy_chars, legacy_overlap)
    if policy.unit == "tokens":
        from .embedders.base import input_window

        window = input_window(embedder)
        if window is None or window.spans is None:
            size = min(policy.size, policy.max_chars)
            fallback = ChunkPolicy("chars", size, min(policy.overlap, size - 1), policy.max_chars)
            return fallback.split
        spans = window.spans
        return lambda text: policy.split(text, spans)
    return policy.split


def chunking_identity(embedder: Any) -> Optional[dict[str, Any]]:
    """The ``chunking`` entry of an embedder's identity: the policy that fits its input
    window, or None when it reads any length (the default policy applies)."""
    from .embedders.base import input_window

    window = input_window(embedder)
    if window is None:
        return None
    result: Optional[dict[str, Any]] = json.loads(policy_for(window).to_json())
    return result
