"""KC-5.9 ``compress_context``: the ranked facts and the cold-tier material rendered into
hot / warm / cold tiers within the token budget ``B = context_max_tokens``.

Pure: it takes what retrieval found and the config, and returns a ``CompressedContext``.
Sections, in order, each item line starting with ``"- "``: ``Directives:`` (when given),
``Known facts:`` (hot, running total ≤ ``hot_tier_ratio·B``, at least one fact),
``Related facts:`` (warm, ≤ ``(hot_tier_ratio+warm_tier_ratio)·B``), then the cold tier
within ``B + cold_overflow_tokens``: ``Overview:`` (broad queries), ``Observed patterns:``,
``Session notes:``, ``Pending intentions:``, ``Emotional state:``, ``Relevant
conversations:``. ``total_tokens = estimate_tokens(context_text) ≤ B +
cold_overflow_tokens`` always holds (a first hot fact too long for B is truncated).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Iterable, Optional, Sequence

from ..config import KnowledgeConfig
from ..text import estimate_tokens
from ..types import CompressedContext

__all__ = ["compress_context"]


def _fact_line(f: Any) -> str:
    if isinstance(f, str):
        return f
    text = getattr(f, "fact_text", None)
    if text is None and isinstance(f, dict):
        text = f.get("fact_text", "")
    return str(text or "")


def _event_line(e: Any, snippet: int) -> Optional[str]:
    text = e.get("text") if isinstance(e, dict) else getattr(e, "text", "")
    text = (text or "").strip()
    if len(text) < 15:
        return None
    when = e.get("occurred_at") if isinstance(e, dict) else getattr(e, "occurred_at", None)
    day = when.strftime("%Y-%m-%d") if isinstance(when, datetime) else str(when or "")[:10]
    return f"({day}) {text[:snippet]}"


def _intention_line(i: Any) -> str:
    def get(key: str) -> Any:
        return i.get(key) if isinstance(i, dict) else getattr(i, key, None)

    return f"{get('intended_action')} (when: {get('trigger_condition')})"


class _Builder:
    def __init__(self) -> None:
        self.parts: list[str] = []
        self.section: Optional[str] = None

    def text_with(self, header: str, line: str) -> str:
        extra = []
        if self.section != header:
            extra.append(("\n\n" if self.parts else "") + header)
        extra.append("\n- " + line)
        return "".join(self.parts) + "".join(extra)

    def add(self, header: str, line: str) -> None:
        if self.section != header:
            self.parts.append(("\n\n" if self.parts else "") + header)
            self.section = header
        self.parts.append("\n- " + line)

    @property
    def text(self) -> str:
        return "".join(self.parts)


def compress_context(
    facts: Sequence[Any] = (),
    *,
    config: Optional[KnowledgeConfig] = None,
    directives: Optional[str] = None,
    broad_query: bool = False,
    cluster_summaries: Iterable[str] = (),
    observations: Iterable[str] = (),
    session_notes: Iterable[str] = (),
    intentions: Iterable[Any] = (),
    emotional_state: Optional[str] = None,
    events: Iterable[Any] = (),
) -> CompressedContext:
    """Render ranked facts (``ScoredFact``, dicts with ``fact_text``, or ready lines) and the
    cold-tier material into tiers (KC-5.9)."""
    cfg = config or KnowledgeConfig()
    B = int(cfg.context_max_tokens)
    hot_cap = cfg.hot_tier_ratio * B
    warm_cap = (cfg.hot_tier_ratio + cfg.warm_tier_ratio) * B
    cold_cap = B + int(cfg.cold_overflow_tokens)
    b = _Builder()
    # 1. directives: one item per non-empty line, within B
    if directives:
        for raw in directives.splitlines():
            line = raw.strip()
            if line.startswith("- "):
                line = line[2:].strip()
            if line and estimate_tokens(b.text_with("Directives:", line)) <= B:
                b.add("Directives:", line)
    hot = warm = cold = 0
    lines = [ln for ln in (_fact_line(f).strip() for f in facts) if ln]
    i = 0
    # 2. hot tier: at least one fact (truncated to fit B if it alone is too long)
    while i < len(lines):
        cand = b.text_with("Known facts:", lines[i])
        if estimate_tokens(cand) <= hot_cap or hot == 0:
            line = lines[i]
            while hot == 0 and estimate_tokens(b.text_with("Known facts:", line)) > B and line:
                line = line[: max(0, len(line) - 4 * (estimate_tokens(b.text_with("Known facts:", line)) - B) - 4)]
            if not line:
                break
            b.add("Known facts:", line)
            hot += 1
            i += 1
            if estimate_tokens(cand) > hot_cap:
                break
        else:
            break
    # 3. warm tier
    while i < len(lines) and estimate_tokens(b.text_with("Related facts:", lines[i])) <= warm_cap:
        b.add("Related facts:", lines[i])
        warm += 1
        i += 1
    # 4. cold tier, within B plus the overflow
    snippet = int(cfg.event_snippet_chars)
    cold_sections: list[tuple[str, list[str]]] = [
        ("Overview:", [s for s in list(cluster_summaries)[:3] if s] if broad_query else []),
        ("Observed patterns:", [s for s in list(observations)[:3] if s]),
        ("Session notes:", [s for s in session_notes if s]),
        ("Pending intentions:", [_intention_line(x) for x in intentions]),
        ("Emotional state:", [emotional_state] if emotional_state else []),
        ("Relevant conversations:", [ln for ln in (_event_line(e, snippet) for e in events) if ln]),
    ]
    for header, items in cold_sections:
        for line in items:
            if estimate_tokens(b.text_with(header, line)) <= cold_cap:
                b.add(header, line)
                cold += 1
    text = b.text
    return CompressedContext(context_text=text, hot_count=hot, warm_count=warm, cold_count=cold, total_tokens=estimate_tokens(text))
