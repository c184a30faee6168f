"""``PendingRecordBatch``: a caller-prepared, validated batch for ``add_batches`` (SC-4.10).

It lives here, not in :mod:`oramem.types`, because building one validates it through the
normaliser: ``oramem.types`` stays a leaf module (layer rule, pyproject.toml
``[tool.importlinter]``). Import it as ``oramem.PendingRecordBatch``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .errors import ArgumentError, ArgumentTypeError
from .normalize import validate_batch_shape
from .types import NOT_SET

__all__ = ["PendingRecordBatch"]


_BATCH_FIELDS = (
    "index_texts",
    "embeddings",
    "record_ids",
    "thread_ids",
    "user_ids",
    "agent_ids",
    "roles",
    "timestamps",
    "metadata",
    "ttl_days",
    "ttl_anchor",
)


@dataclass(frozen=True, init=False)
class PendingRecordBatch:
    """A caller-prepared batch for ``add_batches`` (SC-4.10).

    Holds the per-record arguments of ``add`` for one record type. ``texts`` is the name
    the vendor examples use; ``contents`` is accepted as an alias (not both). The batch is
    fully validated on construction, so a bad batch fails before any store is touched.
    """

    texts: list[Any]
    record_type: str
    index_texts: Any = NOT_SET
    embeddings: Any = NOT_SET
    record_ids: Any = NOT_SET
    thread_ids: Any = NOT_SET
    user_ids: Any = NOT_SET
    agent_ids: Any = NOT_SET
    roles: Any = NOT_SET
    timestamps: Any = NOT_SET
    metadata: Any = NOT_SET
    ttl_days: Any = NOT_SET
    ttl_anchor: Any = NOT_SET
    # normalised form, filled by validation; excluded from equality and repr
    _normalised: Any = field(default=None, compare=False, repr=False)

    def __init__(
        self,
        texts: Any = NOT_SET,
        record_type: Any = NOT_SET,
        *,
        contents: Any = NOT_SET,
        index_texts: Any = NOT_SET,
        embeddings: Any = NOT_SET,
        record_ids: Any = NOT_SET,
        thread_ids: Any = NOT_SET,
        user_ids: Any = NOT_SET,
        agent_ids: Any = NOT_SET,
        roles: Any = NOT_SET,
        timestamps: Any = NOT_SET,
        metadata: Any = NOT_SET,
        ttl_days: Any = NOT_SET,
        ttl_anchor: Any = NOT_SET,
    ) -> None:
        if texts is not NOT_SET and contents is not NOT_SET:
            raise ArgumentError("PendingRecordBatch takes texts or its alias contents, not both")
        if texts is NOT_SET:
            texts = contents
        if texts is NOT_SET:
            raise ArgumentTypeError("PendingRecordBatch needs texts (a list of str or None)")
        if record_type is NOT_SET:
            raise ArgumentTypeError("PendingRecordBatch needs record_type")
        setattr_ = object.__setattr__
        setattr_(self, "texts", texts)
        setattr_(self, "record_type", record_type)
        for name, value in (
            ("index_texts", index_texts),
            ("embeddings", embeddings),
            ("record_ids", record_ids),
            ("thread_ids", thread_ids),
            ("user_ids", user_ids),
            ("agent_ids", agent_ids),
            ("roles", roles),
            ("timestamps", timestamps),
            ("metadata", metadata),
            ("ttl_days", ttl_days),
            ("ttl_anchor", ttl_anchor),
        ):
            setattr_(self, name, value)
        setattr_(self, "_normalised", validate_batch_shape(self))

    @property
    def contents(self) -> list[Any]:
        """Alias of :attr:`texts`."""
        return self.texts

    def add_kwargs(self) -> dict[str, Any]:
        """The keyword arguments of ``add`` this batch stands for (omitted ones left out)."""
        out: dict[str, Any] = {}
        for name in _BATCH_FIELDS:
            value = getattr(self, name)
            if value is not NOT_SET:
                out[name] = value
        return out
