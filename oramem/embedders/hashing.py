"""A deterministic, dependency-free lexical embedder (feature hashing).

:class:`HashEmbedder` maps a text to a signed feature-hashing vector of its lower-cased
word tokens and of the character trigrams of each word. Two texts are close when they
share words or word fragments ("prefer" / "preferences"), so vector search over it behaves
like a fuzzy keyword match. It has *lexical* quality only: it knows nothing of synonyms or
meaning. Use it for tests, demos and offline work; use a real model for semantic recall.

Properties callers may rely on:

- deterministic across processes, platforms and Python versions: feature buckets come
  from ``blake2b`` keyed by ``seed``, never from Python's randomised ``hash()``;
- float32 rows of unit L2 norm;
- a text without any word character (``""``, ``"   "``, ``"?!"``) embeds as one fixed unit
  vector (the reserved empty-text feature), so cosine distances stay finite — never NaN —
  and all such texts are identical to each other;
- ``is_query`` is ignored: queries and passages embed the same way.
"""

from __future__ import annotations

import hashlib
import re
from typing import Sequence

import numpy as np

from .base import IEmbedder, texts_argument

__all__ = ["HashEmbedder"]

_WORD_RE = re.compile(r"\w+", re.UNICODE)
#: Features of one word are cached; the cache is cleared when it reaches this size so
#: memory stays bounded on endless streams of new words.
_CACHE_LIMIT = 200_000
#: Reserved feature for texts without word characters (cannot collide with a word
#: feature, whose names start with "w:" or "c:").
_EMPTY_FEATURE = "\x00empty"
#: A word's own feature and the set of its character trigrams get equal L2 weight, so
#: an exact word match and a near spelling both count.
_WORD_WEIGHT = 1.0
_NGRAM_TOTAL_WEIGHT = 1.0
_NGRAM = 3


class HashEmbedder(IEmbedder):
    """Lexical feature-hashing embedder: ``HashEmbedder(dim=256, seed=0)``.

    ``dim`` is the vector length (>= 2); ``seed`` selects an independent hash family
    (different seeds give unrelated vectors). See the module docstring for guarantees.
    """

    computes_locally = True  # IEmbedder.computes_locally

    def __init__(self, dim: int = 256, *, seed: int = 0) -> None:
        if isinstance(dim, bool) or not isinstance(dim, int):
            raise TypeError(f"HashEmbedder dim must be an int, got {type(dim).__name__}")
        if dim < 2:
            raise ValueError(f"HashEmbedder dim must be >= 2, got {dim}")
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise TypeError(f"HashEmbedder seed must be an int, got {type(seed).__name__}")
        if seed < 0:
            raise ValueError(f"HashEmbedder seed must be >= 0, got {seed}")
        self._dim = dim
        self._seed = seed
        self._key = seed.to_bytes(16, "little", signed=False) if seed < 2**128 else hashlib.blake2b(
            str(seed).encode(), digest_size=16
        ).digest()
        self._cache: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        self._empty = self._features_of(_EMPTY_FEATURE, reserved=True)

    @property
    def embedding_dimension(self) -> int:
        return self._dim

    @property
    def seed(self) -> int:
        return self._seed

    def __repr__(self) -> str:
        return f"HashEmbedder(dim={self._dim}, seed={self._seed})"

    # -- hashing -------------------------------------------------------------------------
    def _bucket(self, feature: str) -> tuple[int, float]:
        digest = hashlib.blake2b(feature.encode("utf-8"), digest_size=8, key=self._key).digest()
        value = int.from_bytes(digest, "little")
        # low bit chooses the sign, the rest the bucket: independent enough for hashing
        sign = 1.0 if value & 1 else -1.0
        return (value >> 1) % self._dim, sign

    def _features_of(self, word: str, *, reserved: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """Bucket indices and signed weights of one (lower-cased) word."""
        cached = self._cache.get(word)
        if cached is not None:
            return cached
        if reserved:
            features = [(word, 1.0)]
        else:
            features = [("w:" + word, _WORD_WEIGHT)]
            padded = f"<{word}>"
            grams = [padded[i : i + _NGRAM] for i in range(len(padded) - _NGRAM + 1)]
            if grams:
                weight = _NGRAM_TOTAL_WEIGHT / len(grams) ** 0.5
                features.extend(("c:" + g, weight) for g in grams)
        idx = np.empty(len(features), dtype=np.int64)
        val = np.empty(len(features), dtype=np.float32)
        for j, (name, weight) in enumerate(features):
            bucket, sign = self._bucket(name)
            idx[j] = bucket
            val[j] = sign * weight
        if len(self._cache) >= _CACHE_LIMIT:
            self._cache.clear()
            self._cache[_EMPTY_FEATURE] = self._empty
        result = (idx, val)
        self._cache[word] = result
        return result

    # -- IEmbedder -----------------------------------------------------------------------
    def embed(self, texts: Sequence[str], *, is_query: bool = False) -> np.ndarray:
        texts = texts_argument(texts, "HashEmbedder.embed")
        n = len(texts)
        out = np.zeros((n, self._dim), dtype=np.float32)
        if n == 0:
            return out
        rows: list[np.ndarray] = []
        cols: list[np.ndarray] = []
        vals: list[np.ndarray] = []
        for i, text in enumerate(texts):
            if not isinstance(text, str):
                raise TypeError(f"HashEmbedder.embed: texts[{i}] must be a str, got {type(text).__name__}")
            words = _WORD_RE.findall(text.lower())
            if not words:
                parts = [self._empty]
            else:
                parts = [self._features_of(w) for w in words]
            for idx, val in parts:
                cols.append(idx)
                vals.append(val)
                rows.append(np.full(idx.shape[0], i, dtype=np.int64))
        r = np.concatenate(rows)
        c = np.concatenate(cols)
        v = np.concatenate(vals)
        # accumulate in float64 for stable sums, then normalise and cast
        acc: np.ndarray = np.bincount(r * self._dim + c, weights=v, minlength=n * self._dim).reshape(n, self._dim)
        norms = np.linalg.norm(acc, axis=1)
        zero = norms == 0.0
        if zero.any():
            # Features cancelled out exactly (opposite signs in one bucket): fall back to the
            # empty-text vector so the row is still a unit vector.
            e_idx, e_val = self._empty
            for row in np.flatnonzero(zero):
                acc[row, e_idx] = e_val
            norms = np.linalg.norm(acc, axis=1)
        acc /= norms[:, None]
        out[:] = acc
        return out
