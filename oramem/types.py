"""Public value types of the store API: enums, the NOT_SET sentinel, result records,
retention settings and caller-prepared batches (STORE_CONTRACT §1, §3, §4.10)."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any, Mapping, Optional, TypeVar

from .errors import ArgumentError, ArgumentTypeError

__all__ = [
    "NOT_SET",
    "NotSetType",
    "RECORD_TYPES",
    "SCOPED_TYPES",
    "PROFILE_TYPES",
    "TTL_TYPES",
    "MAX_LIST_LIMIT",
    "SchemaPolicy",
    "SearchStrategy",
    "SearchIndexSyncMode",
    "TimeToLiveAnchor",
    "MemoryRetentionConfig",
    "Record",
    "MessageRecord",
]


class NotSetType:
    """Type of :data:`NOT_SET`: tells an omitted argument from an explicit ``None``."""

    _instance: Optional["NotSetType"] = None

    def __new__(cls) -> "NotSetType":
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "NOT_SET"

    def __bool__(self) -> bool:
        return False

    def __reduce__(self) -> str:
        return "NOT_SET"


NOT_SET = NotSetType()

#: SC-2.1: every record type the store knows.
RECORD_TYPES: tuple[str, ...] = (
    "message",
    "memory",
    "guideline",
    "fact",
    "preference",
    "user_profile",
    "agent_profile",
    "thread",
)
#: Types that carry thread/user/agent scope (SC-2.2).
SCOPED_TYPES: frozenset[str] = frozenset({"message", "memory", "guideline", "fact", "preference"})
#: Unscoped actor profiles (SC-2.4); their record id is the actor id.
PROFILE_TYPES: frozenset[str] = frozenset({"user_profile", "agent_profile"})
#: Types that accept a time to live (SC-5.1).
TTL_TYPES: frozenset[str] = SCOPED_TYPES
#: SC-3.3: the default window of ``list``.
MAX_LIST_LIMIT = 10_000


_E = TypeVar("_E", bound="_StrEnum")


class _StrEnum(str, enum.Enum):
    """A str-valued enum that also accepts its value or name, case-insensitively."""

    @classmethod
    def _missing_(cls, value: object) -> Any:
        if isinstance(value, str):
            low = value.strip().lower()
            for member in cls:
                if member.value == low or member.name.lower() == low:
                    return member
        return None

    @classmethod
    def coerce(cls: type[_E], value: Any, argument: str) -> _E:
        if isinstance(value, cls):
            return value
        if isinstance(value, str):
            try:
                return cls(value)
            except ValueError:
                pass
        accepted = ", ".join(repr(m.value) for m in cls)
        if not isinstance(value, str):
            raise ArgumentTypeError(f"{argument} must be a {cls.__name__} or one of {accepted}, got {type(value).__name__}")
        raise ArgumentError(f"{argument}={value!r} is not valid; use a {cls.__name__} or one of {accepted}")

    def __str__(self) -> str:
        return str(self.value)


class SchemaPolicy(_StrEnum):
    """What opening a store may do to its schema objects (SC-10.2)."""

    REQUIRE_EXISTING = "require_existing"
    CREATE_IF_EMPTY = "create_if_empty"
    CREATE_IF_NECESSARY = "create_if_necessary"
    RECREATE = "recreate"


class SearchStrategy(_StrEnum):
    """Retrieval strategy of a store and of a search call (SC-6.4, SC-6.6)."""

    VECTOR = "vector"
    HYBRID = "hybrid"
    KEYWORD = "keyword"


class SearchIndexSyncMode(_StrEnum):
    """When keyword/hybrid indexes see new rows (SC-10.5)."""

    ON_COMMIT = "on_commit"
    MANUAL = "manual"
    AUTO = "auto"


class TimeToLiveAnchor(_StrEnum):
    """The instant a time to live counts from (SC-5.3)."""

    CREATED_AT = "created_at"
    TIMESTAMP = "timestamp"


@dataclass(frozen=True)
class MemoryRetentionConfig:
    """Store-wide retention (SC-5.2): ``default_ttl_days`` applies when ``ttl_days`` is
    omitted; ``max_ttl_days`` caps every TTL and replaces an explicit ``None``."""

    default_ttl_days: Optional[int] = None
    max_ttl_days: Optional[int] = None

    def __post_init__(self) -> None:
        for name in ("default_ttl_days", "max_ttl_days"):
            value = getattr(self, name)
            if value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, int):
                raise ArgumentTypeError(f"MemoryRetentionConfig.{name} must be an int >= 0 or None, got {value!r}")
            if value < 0:
                raise ArgumentError(f"MemoryRetentionConfig.{name} must be >= 0, got {value}")
        if (
            self.default_ttl_days is not None
            and self.max_ttl_days is not None
            and self.default_ttl_days > self.max_ttl_days
        ):
            raise ArgumentError(
                f"MemoryRetentionConfig.default_ttl_days ({self.default_ttl_days}) exceeds "
                f"max_ttl_days ({self.max_ttl_days}); lower the default or raise the maximum"
            )


@dataclass(frozen=True)
class Record:
    """A stored record as every read path returns it (SC-3.1)."""

    id: str
    record_type: str
    content: Optional[str] = None
    timestamp: Optional[str] = None
    metadata: Optional[Mapping[str, Any]] = None
    thread_id: Optional[str] = None
    user_id: Optional[str] = None
    agent_id: Optional[str] = None
    created_at: Optional[str] = None
    expires_at: Optional[str] = None


@dataclass(frozen=True)
class MessageRecord(Record):
    """A ``message`` record: adds the speaker ``role`` and the per-store ``seq_no``."""

    role: Optional[str] = None
    seq_no: Optional[int] = None
