"""The small interface every measured system implements.

The harness owns timing; an adapter only does the work. Results are corpus row indices
(ints), nearest first, so recall is computed the same way for every system.
"""

from __future__ import annotations

import abc
from typing import Optional

import numpy as np

from ..corpus import Corpus

__all__ = ["Adapter", "NotMeasured", "Unsupported", "row_of"]


class NotMeasured(Exception):
    """The system cannot be measured here (not installed, fails to import or to start);
    the message is reported as ``not measured: <reason>``."""


class Unsupported(Exception):
    """This system has no such operation (reported as ``n/a: <reason>``)."""


class Adapter(abc.ABC):
    #: short stable name used on the command line, in JSON and in tables
    name: str = ""
    #: one line shown in the report: what exactly is measured
    description: str = ""
    #: True when search results are approximate (recall is still measured)
    approximate: bool = False
    #: True: the harness also times numpy brute force in the same process, alternating
    #: query by query, so the ratio to the physical reference is immune to load drift
    paired_reference: bool = False

    def __init__(self, workdir: str, dim: int) -> None:
        self.workdir = workdir
        self.dim = dim

    # -- lifecycle -----------------------------------------------------------------------
    def check(self) -> None:
        """Import what the system needs; raise :class:`NotMeasured` with the reason."""

    @abc.abstractmethod
    def create(self) -> None:
        """Create an empty, persistent store under ``workdir``."""

    @abc.abstractmethod
    def insert(self, corpus: Corpus) -> None:
        """Insert every record with its precomputed vector, text, scope and metadata, and
        build whatever the store needs to answer queries (counted in insert time)."""

    @abc.abstractmethod
    def open(self) -> None:
        """Open the store persisted by :meth:`insert` (a fresh process calls this)."""

    def close(self) -> None:
        """Release the store."""

    # -- queries -------------------------------------------------------------------------
    @abc.abstractmethod
    def search(self, q: np.ndarray, k: int) -> list[int]:
        """k nearest records to the unit vector ``q`` (cosine)."""

    def search_user(self, q: np.ndarray, k: int, user: int) -> list[int]:
        """k nearest among the records of ``user{user}``."""
        raise Unsupported("no scope filter")

    def search_meta(self, q: np.ndarray, k: int, topic: str, min_priority: int) -> list[int]:
        """k nearest among records with metadata topic == ``topic`` and priority >= ``min_priority``."""
        raise Unsupported("no metadata filter")

    def keyword(self, text: str, k: int) -> list[int]:
        """k best full-text matches of the plain words in ``text``."""
        raise Unsupported("no full-text search")

    def footprint_bytes(self) -> Optional[int]:
        """Bytes on disk of the persisted store, when it is files under ``workdir``."""
        import os

        total = 0
        for root, _dirs, files in os.walk(self.workdir):
            for f in files:
                try:
                    total += os.path.getsize(os.path.join(root, f))
                except OSError:
                    pass
        return total


def row_of(record_id: str) -> int:
    """Corpus row of a record id ``r<row>``."""
    return int(record_id[1:])
