"""How the store splits a retrieval text into retrieval rows (SC-4.5).

A text up to ``max_chars`` characters is one chunk, kept verbatim. A longer text is cut
into windows of at most ``max_chars`` characters that overlap by about ``overlap``
characters, each cut placed at the last paragraph, sentence or word boundary inside the
window so that words are never split (a single word longer than a window is cut hard).
A blank text (empty or only white space) has no chunks: the record is stored but never
found by search. Caller-owned chunks (a list ``index_texts`` entry) never pass through
here.
"""

from __future__ import annotations

__all__ = ["DEFAULT_CHUNK_CHARS", "DEFAULT_CHUNK_OVERLAP", "chunk_text"]

DEFAULT_CHUNK_CHARS = 2000
DEFAULT_CHUNK_OVERLAP = 200

_BOUNDARIES = ("\n\n", ". ", "! ", "? ", "\n", " ")


def chunk_text(text: str, max_chars: int = DEFAULT_CHUNK_CHARS, overlap: int = DEFAULT_CHUNK_OVERLAP) -> list[str]:
    """Split ``text`` into retrieval chunks (see the module docstring)."""
    if max_chars < 1 or not 0 <= overlap < max_chars:
        raise ValueError(f"chunking needs max_chars >= 1 and 0 <= overlap < max_chars, got {max_chars}, {overlap}")
    if not text.strip():
        return []
    if len(text) <= max_chars:
        return [text]
    chunks: list[str] = []
    start, n = 0, len(text)
    while start < n:
        end = min(start + max_chars, n)
        if end < n:
            end = _cut(text, start, end)
        piece = text[start:end].strip()
        if piece:
            chunks.append(piece)
        if end >= n:
            break
        nxt = max(end - overlap, start + 1)
        # begin the next window on a word boundary
        space = text.find(" ", nxt, end)
        start = space + 1 if space != -1 else nxt
    return chunks


def _cut(text: str, start: int, end: int) -> int:
    """The best cut position in ``(start, end]``: after the last boundary in the second
    half of the window, else a hard cut at ``end``."""
    floor = start + (end - start) // 2
    for sep in _BOUNDARIES:
        pos = text.rfind(sep, floor, end)
        if pos != -1:
            return pos + len(sep)
    return end
