"""Deterministic test doubles for the knowledge layer (KC-2.3, KC-7.4).

- :class:`ScriptedLLM` routes on the **task** named in the prompt (``[oramem-task:<task>]``),
  never on call order, and hands routes the task payload parsed from
  ``<oramem-input>{json}</oramem-input>``.
- :class:`Delay` wraps a reply with a sleep (timeouts, concurrency).
- :class:`HashEmbedder` is :class:`oramem.embedders.HashEmbedder`.
- :func:`fail_at` injects a database error at a commit step of ``write``.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import json
import re
import threading
from typing import Any, Iterator, Mapping, Optional, Sequence

from .embedders import HashEmbedder
from .knowledge.errors import LLMError
from .knowledge.faults import COMMIT_STEPS, FAIL_AT, armed
from .knowledge.llm.providers import BaseLLMProvider, LLMResult
from .knowledge.text import estimate_tokens
from .knowledge.types import TokenUsage

__all__ = ["ScriptedLLM", "Delay", "HashEmbedder", "fail_at"]

_TASK = re.compile(r"^\[oramem-task:([a-z_]+)\]")
_INPUT = re.compile(r"<oramem-input>(.*)</oramem-input>\s*$", re.S)


class Delay:
    """``Delay(seconds, reply)``: sleep, then answer with ``reply`` (any route form)."""

    def __init__(self, seconds: float, reply: Any) -> None:
        if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or seconds < 0:
            raise ValueError("seconds must be a number >= 0")
        self.seconds = float(seconds)
        self.reply = reply


class ScriptedLLM(BaseLLMProvider):
    """``ScriptedLLM(routes, *, default=None)``.

    A route is a reply (dict or str), a list of replies consumed in turn (the last one
    repeats), a callable ``payload -> reply``, an exception (instance or class) to raise,
    or :class:`Delay`. An unrouted task raises ``LLMError("no route for task …")`` unless
    ``default`` is set. ``.calls`` lists ``(task, payload)`` in order. Usage is estimated
    with ``estimate_tokens`` so results carry non-zero token counts.
    """

    def __init__(self, routes: Optional[Mapping[str, Any]] = None, *, default: Any = None) -> None:
        self.routes: dict[str, Any] = dict(routes or {})
        self.default = default
        self.calls: list[tuple[str, dict]] = []
        self._positions: dict[str, int] = {}
        self._lock = threading.Lock()

    def route(self, task: str, reply: Any) -> None:
        """Replace (or add) the route of ``task``."""
        with self._lock:
            self.routes[task] = reply
            self._positions.pop(task, None)

    def calls_for(self, task: str) -> list[dict]:
        return [p for t, p in self.calls if t == task]

    @staticmethod
    def parse(messages: Sequence[Mapping[str, str]]) -> tuple[str, dict]:
        system = next((m["content"] for m in messages if m.get("role") == "system"), "")
        m = _TASK.match(system)
        if not m:
            raise LLMError("prompt lacks the [oramem-task:<task>] marker")
        last_user = next((m_["content"] for m_ in reversed(messages) if m_.get("role") == "user"), "")
        p = _INPUT.search(last_user)
        if not p:
            raise LLMError("prompt lacks the <oramem-input> payload")
        return m.group(1), json.loads(p.group(1))

    async def complete_async(self, messages, *, temperature=0.0, response_format=None, max_tokens=None, timeout=None):
        task, payload = self.parse(messages)
        with self._lock:
            self.calls.append((task, payload))
            if task in self.routes:
                route = self.routes[task]
            elif self.default is not None:
                route = self.default
            else:
                raise LLMError(f"no route for task {task!r}")
            if isinstance(route, list):
                pos = self._positions.get(task, 0)
                self._positions[task] = pos + 1
                route = route[min(pos, len(route) - 1)] if route else {}
        reply = await self._resolve(route, payload)
        text = reply if isinstance(reply, str) else json.dumps(reply)
        prompt = sum(len(m["content"]) for m in messages) // 4
        out = estimate_tokens(text)
        return LLMResult(text, TokenUsage(prompt, out, prompt + out))

    async def _resolve(self, route: Any, payload: dict) -> Any:
        while True:
            if isinstance(route, Delay):
                await asyncio.sleep(route.seconds)
                route = route.reply
                continue
            if isinstance(route, BaseException):
                raise route
            if inspect.isclass(route) and issubclass(route, BaseException):
                raise route("scripted failure")
            if callable(route):
                route = route(payload)
                if inspect.isawaitable(route):
                    route = await route
                continue
            return route


@contextlib.contextmanager
def fail_at(*steps: str) -> Iterator[None]:
    """Inject a database error at commit step(s) of ``KnowledgeMemory.write`` (KC-7.4):
    event, entities, facts, links, relations, registry, intentions, observations, store_index."""
    with armed(FAIL_AT, steps, COMMIT_STEPS, "fail_at"):
        yield
