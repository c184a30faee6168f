"""In-flight values of one write (steps 1-6 produce them, the commit phase applies them)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Optional

import numpy as np

from ..kg_vectors import fact_index_text

__all__ = ["XEntity", "XFact", "XRelation", "Decision", "NewEntity", "XIntention", "XObservation", "new_id"]


def new_id() -> str:
    return str(uuid.uuid4())


@dataclass
class XEntity:
    name: str
    type: str
    aliases: list[str] = field(default_factory=list)


@dataclass
class XFact:
    idx: int
    subject: str
    fact: str
    category: Optional[str]
    confidence: float
    importance: float
    raw_attribute_key: Optional[str] = None
    attribute_key: Optional[str] = None
    value: Any = None
    is_sensitive: bool = False
    valid_from: Optional[datetime] = None
    ttl_days: Optional[int] = None
    source_context: str = "conversation"
    mirror: bool = False
    subject_key: str = ""
    subject_name: str = ""
    subject_type: str = ""
    vec: Optional[np.ndarray] = None
    new_id: Optional[str] = None

    @property
    def index_text(self) -> str:
        return fact_index_text(self.subject_name or self.subject, self.fact)


@dataclass
class XRelation:
    source: str
    target: str
    rel_type: str
    source_key: str = ""
    target_key: str = ""
    evidence: Optional["Decision"] = None
    #: the type as the extraction said it, before KC-4.14's aliases ("daughter" for family_of):
    #: the mirror fact keeps a role's word
    said: str = ""


@dataclass
class Decision:
    fact: XFact
    action: str  # ADD | UPDATE | NOOP | DELETE
    target: Optional[dict[str, Any]] = None  # existing fact row (dict of columns)
    kind: str = "change"  # change | correction (UPDATE only)
    late: bool = False

    @property
    def evidence_id(self) -> Optional[str]:
        if self.action in ("ADD", "UPDATE"):
            return self.fact.new_id
        if self.action == "NOOP" and self.target is not None:
            return str(self.target["id"])
        return None


@dataclass
class NewEntity:
    key: str
    display_name: str
    entity_type: str
    vec: Optional[np.ndarray]
    summary: Optional[str] = None


@dataclass
class XIntention:
    trigger_type: str
    trigger_condition: str
    intended_action: str
    due_date: Optional[datetime]
    vec: Optional[np.ndarray] = None


@dataclass
class XObservation:
    content: str
    topic: Optional[str]
    entity_names: list[str]
    entity_keys: list[str] = field(default_factory=list)
    vec: Optional[np.ndarray] = None
