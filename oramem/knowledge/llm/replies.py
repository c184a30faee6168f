"""The reply schema of every LLM task (KC-2.4), as pydantic models.

One model per task; :func:`validate_reply` checks a parsed reply against its task's model and
turns the first violation into one :class:`~oramem.knowledge.errors.LLMReplyError` that names
the task and the field (``facts[2].subject``). The models check what the steps rely on and no
more: extra keys are allowed, and the fields a step reads item by item (``reconcile``'s
decisions, ``consolidate``'s observations, optional extraction fields) stay loose there, because
those steps skip a bad item and keep the rest (KC-4.x, KC-6.4). The steps keep reading the reply
as the ``dict`` it was parsed into; the models are the gate, not a new representation.

Strictness matches JSON: a string is not a number, ``true`` is not ``1``, a number is not a
string; a float where an integer index is expected (``1e308``) is refused.
"""

from __future__ import annotations

import math
from typing import Annotated, Any, Literal, Optional, Union

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, Strict, ValidationError

from ..errors import LLMReplyError

__all__ = ["REPLY_MODELS", "validate_reply", "EMOTIONS", "ENERGIES"]

EMOTIONS = ("joy", "sadness", "anger", "fear", "surprise", "disgust", "trust", "anticipation", "neutral")
ENERGIES = ("low", "medium", "high")


def _non_empty(value: str) -> str:
    if not value.strip():
        raise ValueError("must be a non-empty string")
    return value


def _number(value: Any) -> Any:
    # JSON numbers only: bool is an int subclass in Python and a string is not a number
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError("must be a number")
    if not math.isfinite(value):
        # json.loads accepts NaN and Infinity, which are not JSON; NaN would slip past every
        # comparison (a NaN rerank score is neither below 0 nor above 1)
        raise ValueError("must be a finite number")
    return value


def _count_or_list(value: Any) -> Any:
    if isinstance(value, bool) or not isinstance(value, (int, list)):
        raise ValueError("must be an integer or a list")
    return value


Text = Annotated[str, Strict(), AfterValidator(_non_empty)]
Number = Annotated[float, BeforeValidator(_number)]
Objects = Annotated[list[dict[str, Any]], Strict()]


class _Reply(BaseModel):
    model_config = ConfigDict(extra="allow", frozen=True)


class _Entity(_Reply):
    name: Text


class _Fact(_Reply):
    subject: Text
    fact: Text


class _Relation(_Reply):
    source: Text
    target: Text


class _Intention(_Reply):
    trigger_condition: Text
    intended_action: Text


class _Observation(_Reply):
    content: Text


class ExtractReply(_Reply):
    entities: Annotated[list[_Entity], Strict()]
    facts: Annotated[list[_Fact], Strict()]
    relations: Optional[Annotated[list[_Relation], Strict()]] = None
    intentions: Optional[Annotated[list[_Intention], Strict()]] = None
    observations: Optional[Annotated[list[_Observation], Strict()]] = None
    updated_summaries: Optional[Annotated[dict[str, Any], Strict()]] = None


class EmotionReply(_Reply):
    emotion: Literal[EMOTIONS]  # type: ignore[valid-type]  # a tuple of literals, spelled once
    intensity: Annotated[Number, Field(ge=0.0, le=1.0)]
    energy: Literal[ENERGIES]  # type: ignore[valid-type]


class ResolveReply(_Reply):
    match_index: Annotated[int, Strict()]


class ReconcileReply(_Reply):
    decisions: Objects


class RerankReply(_Reply):
    scores: Annotated[list[Number], Strict()]


class SummaryReply(_Reply):
    summary: Text


class CommunityReply(_Reply):
    title: Text
    summary: Text


class ConsolidateReply(_Reply):
    observations: Objects


class MergeReply(_Reply):
    should_merge: Annotated[bool, Strict()]


class DirectivesReply(_Reply):
    directives_block: Annotated[str, Strict()]
    directives_used: Annotated[Union[int, list[Any]], BeforeValidator(_count_or_list)] = 0


class ContradictionReply(_Reply):
    has_contradiction: Annotated[bool, Strict()]
    conflicting_directive: Optional[Annotated[str, Strict()]] = None
    resolution: Optional[Annotated[str, Strict()]] = None


REPLY_MODELS: dict[str, type[_Reply]] = {
    "extract": ExtractReply,
    "event_emotion": EmotionReply,
    "resolve_entity": ResolveReply,
    "reconcile": ReconcileReply,
    "rerank": RerankReply,
    "cluster_summary": SummaryReply,
    "entity_summary": SummaryReply,
    "community": CommunityReply,
    "consolidate": ConsolidateReply,
    "entity_merge": MergeReply,
    "directives": DirectivesReply,
    "contradiction": ContradictionReply,
}


def _path(loc: tuple[Union[int, str], ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else part
    return out or "reply"


def validate_reply(task: str, reply: dict[str, Any]) -> dict[str, Any]:
    """Check ``reply`` against ``task``'s model; a task without a model passes unchecked.
    Returns the reply itself; raises :class:`LLMReplyError` (task and field) on the first
    violation."""
    model = REPLY_MODELS.get(task)
    if model is None:
        return reply
    try:
        model.model_validate(reply)
    except ValidationError as exc:
        first = exc.errors(include_url=False, include_input=False)[0]
        field = _path(tuple(first["loc"]))
        msg = str(first["msg"])
        if msg.startswith("Value error, "):
            msg = msg[len("Value error, "):]
        raise LLMReplyError(task, field, msg) from None
    return reply
