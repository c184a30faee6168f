"""The synthetic corpus every system is measured on.

Vectors resemble sentence embeddings: a few hundred cluster centres drawn uniformly on the
unit sphere, each record a centre plus gaussian noise, normalised to unit length (float32).
Neighbourhoods are therefore dense and uneven, unlike i.i.d. random vectors, for which every
point is almost equidistant from every other and ANN recall is meaningless.

Each record also carries what agent memories carry: a user (10 users, so one user's scope
is ~10 % of the store), a thread owned by that user, metadata ``{"topic", "priority",
"tags"}`` and a short text drawn from a small vocabulary, skewed towards its topic's words
so keyword search has something to find.

Everything is a pure function of ``(size, dim, seed)``: every system (and every worker
process) sees exactly the same records and queries.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Optional

import numpy as np

__all__ = ["Corpus", "Queries", "make_corpus", "make_queries", "N_USERS", "TOPICS"]

N_USERS = 10
N_THREADS_PER_USER = 50
N_CLUSTERS = 256
TOPICS = [
    "travel", "billing", "health", "music", "cooking", "sports", "finance", "garden",
    "movies", "books", "coding", "family", "work", "weather", "pets", "cars",
    "fitness", "shopping", "school", "games",
]
TAGS = ["urgent", "todo", "idea", "followup", "personal", "shared", "draft", "archived"]
_CONSONANTS = "bdfgklmnprstvz"
_VOWELS = "aeiou"
VOCAB_SIZE = 2000
WORDS_PER_TEXT = 12


def _vocabulary(size: int) -> list[str]:
    """Deterministic pronounceable pseudo-words (``bako``, ``tirune``, ...), all distinct."""
    words: list[str] = []
    seen: set[str] = set()
    rng = np.random.default_rng(12345)
    while len(words) < size:
        syllables = int(rng.integers(2, 4))
        word = "".join(
            _CONSONANTS[int(rng.integers(len(_CONSONANTS)))] + _VOWELS[int(rng.integers(len(_VOWELS)))]
            for _ in range(syllables)
        )
        if word not in seen:
            seen.add(word)
            words.append(word)
    return words


@dataclasses.dataclass
class Corpus:
    size: int
    dim: int
    seed: int
    vectors: np.ndarray          # (size, dim) float32, unit rows
    user_codes: np.ndarray       # (size,) int16 in [0, N_USERS)
    thread_codes: np.ndarray     # (size,) int32
    topic_codes: np.ndarray      # (size,) int16 index into TOPICS
    priorities: np.ndarray       # (size,) int8 in [1, 5]
    tag_bits: np.ndarray         # (size,) uint8 bit set over TAGS
    texts: list[str]
    vocabulary: list[str]

    # -- per-record views every adapter uses ------------------------------------------
    def record_id(self, i: int) -> str:
        return f"r{i}"

    def ids(self) -> list[str]:
        return [f"r{i}" for i in range(self.size)]

    def user_id(self, i: int) -> str:
        return f"user{int(self.user_codes[i])}"

    def thread_id(self, i: int) -> str:
        return f"thread{int(self.thread_codes[i])}"

    def tags(self, i: int) -> list[str]:
        bits = int(self.tag_bits[i])
        return [tag for b, tag in enumerate(TAGS) if bits >> b & 1]

    def metadata(self, i: int) -> dict[str, Any]:
        return {"topic": TOPICS[int(self.topic_codes[i])], "priority": int(self.priorities[i]), "tags": self.tags(i)}


@dataclasses.dataclass
class Queries:
    vectors: np.ndarray          # (n, dim) float32 unit rows
    users: np.ndarray            # (n,) int user code for the scoped search
    topics: np.ndarray           # (n,) int topic code for the metadata filter
    min_priority: np.ndarray     # (n,) int: filter is topic == t AND priority >= p
    keywords: list[str]          # (n,) two words each, space-separated

    def __len__(self) -> int:
        return int(self.vectors.shape[0])


def _unit(a: np.ndarray) -> np.ndarray:
    a = a.astype(np.float32, copy=False)
    a /= np.linalg.norm(a, axis=1, keepdims=True)
    return a


def _centres(dim: int, seed: int) -> np.ndarray:
    return _unit(np.random.default_rng([seed, 1]).standard_normal((N_CLUSTERS, dim)))


# Noise level: with d=384 a per-coordinate sigma of 0.05 gives a record-to-centre cosine of
# ~0.75 and same-cluster neighbours at cosine ~0.55, close to what sentence encoders show.
NOISE = 0.05


def make_corpus(size: int, dim: int, seed: int = 7) -> Corpus:
    rng = np.random.default_rng([seed, size, dim])
    centres = _centres(dim, seed)
    # uneven cluster sizes (a few popular subjects, a long tail)
    weights = rng.zipf(1.3, N_CLUSTERS).astype(np.float64)
    weights = np.minimum(weights, 50.0)
    weights /= weights.sum()
    clusters = rng.choice(N_CLUSTERS, size=size, p=weights)
    vectors = np.empty((size, dim), dtype=np.float32)
    step = 50_000
    for start in range(0, size, step):
        stop = min(size, start + step)
        block = centres[clusters[start:stop]] + rng.standard_normal((stop - start, dim), dtype=np.float32) * NOISE
        vectors[start:stop] = _unit(block)
    user_codes = rng.integers(0, N_USERS, size).astype(np.int16)
    thread_codes = (user_codes.astype(np.int32) * N_THREADS_PER_USER
                    + rng.integers(0, N_THREADS_PER_USER, size)).astype(np.int32)
    topic_codes = (clusters % len(TOPICS)).astype(np.int16)  # topic follows the subject
    priorities = rng.integers(1, 6, size).astype(np.int8)
    tag_bits = (rng.random((size, len(TAGS))) < 0.2) @ (1 << np.arange(len(TAGS)))
    tag_bits = tag_bits.astype(np.uint8)
    vocabulary = _vocabulary(VOCAB_SIZE)
    texts = _texts(rng, size, topic_codes, vocabulary)
    return Corpus(size, dim, seed, vectors, user_codes, thread_codes, topic_codes, priorities, tag_bits,
                  texts, vocabulary)


def _texts(rng: np.random.Generator, size: int, topic_codes: np.ndarray, vocabulary: list[str]) -> list[str]:
    """Twelve words per record: a Zipf-skewed draw from the whole vocabulary plus a few
    words from the record's topic's own slice of it, prefixed by the topic name."""
    v = len(vocabulary)
    ranks = np.minimum(rng.zipf(1.2, (size, WORDS_PER_TEXT - 4)), v) - 1
    per_topic = v // len(TOPICS)
    topical = topic_codes[:, None].astype(np.int64) * per_topic + rng.integers(0, per_topic, (size, 3))
    words = np.concatenate([ranks, topical], axis=1)
    vocab = np.asarray(vocabulary, dtype=object)
    topics = np.asarray(TOPICS, dtype=object)
    return [f"{topics[t]} " + " ".join(vocab[row]) for t, row in zip(topic_codes.tolist(), words)]


def make_queries(corpus: Corpus, n: int, seed: Optional[int] = None) -> Queries:
    """Query vectors from the same distribution as the records (not records themselves),
    with a user, a metadata filter and two keywords each."""
    seed = corpus.seed if seed is None else seed
    rng = np.random.default_rng([seed, corpus.size, corpus.dim, 99])
    centres = _centres(corpus.dim, corpus.seed)
    pick = rng.integers(0, corpus.size, n)
    # near a record's subject, as a user's question is near the memories it should find
    clusters_of = np.argmax(corpus.vectors[pick] @ centres.T, axis=1)
    vectors = _unit(centres[clusters_of] + rng.standard_normal((n, corpus.dim), dtype=np.float32) * NOISE)
    users = rng.integers(0, N_USERS, n)
    topics = corpus.topic_codes[pick].astype(np.int64)
    min_priority = rng.integers(2, 5, n)
    per_topic = len(corpus.vocabulary) // len(TOPICS)
    keywords = []
    for t in topics.tolist():
        a = corpus.vocabulary[t * per_topic + int(rng.integers(per_topic))]
        b = corpus.vocabulary[int(rng.integers(len(corpus.vocabulary)))]
        keywords.append(f"{a} {b}")
    return Queries(vectors, users, topics, min_priority, keywords)
