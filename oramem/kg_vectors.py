"""The text each vector of the knowledge tables is embedded from, in one place: the knowledge
layer's write path and background jobs embed these texts, and ``oramem reembed`` embeds the
same texts again with the new embedder, so a re-embedded vector equals what a fresh write
with that embedder stores (rek43).

=====================  ========================  ==============================================
table (``<STORE>_KG_``) vector column             text
=====================  ========================  ==============================================
EVENT                  embedding_vec             ``text`` (the message)
FACT                   embedding_vec             :func:`fact_index_text` (``"<name>: <fact>"``)
ENTITY                 embedding_vec             ``display_name`` (the name it was created with)
INTENTION              trigger_embedding_vec     ``trigger_condition``
SESSION_OBSERVATION    embedding_vec             ``content``
META_OBSERVATION       embedding_vec             :func:`observation_embed_text`
CLUSTER                embedding_vec             ``summary_text``; without one, the normalised
                                                 mean of its member facts' vectors
                                                 (:func:`mean_unit_vector`)
=====================  ========================  ==============================================

Known approximation: an entity whose display name was extended after it was created was
embedded from its first name; a reembed embeds the current ``display_name``.

Nothing here imports an engine or the knowledge layer: both import it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Optional, Sequence

import numpy as np

__all__ = [
    "VectorSource", "SOURCES", "CLUSTER_TABLE", "FACT_TABLE", "COMMUNITY_THEME", "kg_table_name",
    "fact_index_text", "observation_embed_text", "mean_unit_vector",
]

#: the meta-observation type the community job writes, embedded from title and summary
COMMUNITY_THEME = "community_theme"
FACT_TABLE = "FACT"
CLUSTER_TABLE = "CLUSTER"


def kg_table_name(store_id: str, table: str) -> str:
    """The knowledge table ``table`` (``"FACT"``, ...) of store ``store_id``."""
    return f"{store_id.upper()}_KG_{table}"


def fact_index_text(name: str, fact: str) -> str:
    """What a fact is embedded (and indexed in the store) from: its subject's name and its text."""
    return f"{name}: {fact}"


def observation_embed_text(observation_type: str, title: str, text: str) -> str:
    """A community theme is embedded from its title and summary, every other meta
    observation from its title."""
    return f"{title}\n{text}" if observation_type == COMMUNITY_THEME else title


def mean_unit_vector(vectors: Sequence[Any]) -> Optional[np.ndarray]:
    """A cluster without a summary: the mean of its facts' vectors, scaled to unit length
    (``None`` without vectors)."""
    if not vectors:
        return None
    m: np.ndarray = np.mean(np.stack([np.asarray(v, dtype=np.float32) for v in vectors]), axis=0)
    n = float(np.linalg.norm(m))
    out: np.ndarray = m / n if n > 0 else m
    return out


def _fact(entity_name: Optional[str], entity_key: str, fact_text: str) -> str:
    # the write path stores entity_name = the subject's resolved name; a row without one
    # (not written by the write path) falls back to the name part of its key
    return fact_index_text(entity_name or entity_key.split(":", 1)[-1], fact_text)


def _entity(display_name: Optional[str], canonical_key: str) -> str:
    return display_name or canonical_key.split(":", 1)[-1]


@dataclass(frozen=True)
class VectorSource:
    """One knowledge table's vector: the table (suffix after ``<STORE>_KG_``), the vector
    column, the columns its text is made from and the function that makes it."""

    table: str
    column: str
    text_columns: tuple[str, ...]
    text: Callable[..., str]


#: every knowledge vector but the cluster's (which may be a mean of its facts' vectors:
#: re-embedded after the facts, see the module docstring)
SOURCES: tuple[VectorSource, ...] = (
    VectorSource("EVENT", "embedding_vec", ("text",), lambda text: text),
    VectorSource(FACT_TABLE, "embedding_vec", ("entity_name", "entity_key", "fact_text"), _fact),
    VectorSource("ENTITY", "embedding_vec", ("display_name", "canonical_key"), _entity),
    VectorSource("INTENTION", "trigger_embedding_vec", ("trigger_condition",), lambda text: text),
    VectorSource("SESSION_OBSERVATION", "embedding_vec", ("content",), lambda text: text),
    VectorSource("META_OBSERVATION", "embedding_vec", ("observation_type", "title", "text"), observation_embed_text),
)
