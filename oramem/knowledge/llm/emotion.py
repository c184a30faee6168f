"""Emotion tagging (KC-4.7): one vocabulary, shared with the ``event_emotion`` task schema."""

from __future__ import annotations


from typing import Any, Optional

from ..._sync import run_sync
from ..errors import LLMError, plain_text
from .tasks import TaskCall

__all__ = ["tag_event_emotion", "tag_event_emotion_sync", "tag_emotion_detailed"]

DEFAULT_TIMEOUT = 30.0


async def tag_emotion_detailed(
    event_text: str, call: TaskCall, timeout: float = DEFAULT_TIMEOUT
) -> tuple[Optional[dict[str, Any]], Optional[str]]:
    """``({"emotion", "intensity", "energy"}, None)`` or ``(None, reason)``; never raises
    for LLM problems (an unknown value or an out-of-range intensity is a failure)."""
    try:
        reply = await call("event_emotion", {"text": event_text}, timeout)
    except LLMError as exc:
        return None, plain_text(exc)  # the reason is stored in the event's trace: no quoted reply
    return {"emotion": reply["emotion"], "intensity": float(reply["intensity"]), "energy": reply["energy"]}, None


async def tag_event_emotion(event_text: str, llm: Any) -> Optional[dict[str, Any]]:
    """Infer emotion, intensity and energy of a text; ``None`` on any failure."""
    result, _ = await tag_emotion_detailed(event_text, TaskCall(llm))
    return result


def tag_event_emotion_sync(event_text: str, llm: Any) -> Optional[dict[str, Any]]:
    """Sync twin of :func:`tag_event_emotion` (KC-1.3)."""
    return run_sync(tag_event_emotion(event_text, llm), name="tag_event_emotion_sync", use="tag_event_emotion")
