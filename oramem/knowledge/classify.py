"""Input classification, strategy selection and chunking (KC-4.3 to KC-4.5). Pure."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Optional

from .types import ExtractionMode, ExtractionStrategy, InputClassification, InputType

__all__ = ["classify_input", "select_strategy", "split_chunks", "Chunk"]

_BULLET = re.compile(r"^\s*[-*•] ")


def _is_header(line: str) -> bool:
    if re.match(r"^#{1,4} ", line) or re.match(r"^\d+[.)] ", line):
        return True
    caps = re.fullmatch(r"[A-ZÀ-Ú ]+", line)
    return bool(caps) and sum(1 for ch in line if ch != " ") >= 5


def _is_table(line: str) -> bool:
    return line.count("|") >= 2


def classify_input(text: str) -> InputClassification:
    lines = text.split("\n")
    char_count = len(text)
    has_headers = any(_is_header(line) for line in lines)
    has_bullets = any(_BULLET.match(line) for line in lines)
    has_tables = any(_is_table(line) for line in lines)
    sections = [b for b in re.split(r"\n\s*\n", text) if b.strip()]
    if char_count < 500:
        input_type = InputType.SHORT
    elif char_count > 500 and (has_headers or has_bullets or has_tables):
        input_type = InputType.STRUCTURED
    elif char_count <= 2000:
        input_type = InputType.MEDIUM
    else:
        input_type = InputType.LONG
    return InputClassification(
        input_type=input_type,
        char_count=char_count,
        estimated_tokens=char_count // 4,
        has_headers=has_headers,
        has_bullets=has_bullets,
        has_tables=has_tables,
        section_count=len(sections),
        line_count=text.count("\n") + 1,
    )


def select_strategy(c: InputClassification) -> ExtractionStrategy:
    if c.input_type in (InputType.SHORT, InputType.MEDIUM):
        short = c.input_type is InputType.SHORT
        return ExtractionStrategy(
            mode=ExtractionMode.SINGLE_SHOT,
            reason=f"{c.input_type.value} input ({c.char_count} chars): one extraction call",
            max_tokens_per_call=4096 if short else 6144,
            estimated_chunks=1,
            chunk_context_hint=None,
        )
    n = max(2, min(8, c.char_count // 1500))
    if c.input_type is InputType.STRUCTURED:
        hint = "structured document with tables" if c.has_tables else "structured document with headers/sections"
    else:
        hint = "long unstructured text"
    return ExtractionStrategy(
        mode=ExtractionMode.CHUNKED,
        reason=f"{c.input_type.value} input ({c.char_count} chars): {n} chunks",
        max_tokens_per_call=4096,
        estimated_chunks=n,
        chunk_context_hint=hint,
    )


@dataclass
class Chunk:
    index: int
    count: int
    text: str
    heading: Optional[str]


def _units(text: str, structured: bool) -> list[str]:
    """Cut points never fall inside a line: STRUCTURED cuts before headers and at blank
    lines; LONG at paragraph ends, then at sentence ends within long paragraphs."""
    lines = text.split("\n")
    units: list[list[str]] = [[]]
    for line in lines:
        if structured:
            if _is_header(line) and units[-1]:
                units.append([])
            units[-1].append(line)
            if not line.strip():
                units.append([])
        else:
            units[-1].append(line)
            if not line.strip():
                units.append([])
    out = ["\n".join(u) for u in units if u]
    if structured:
        return out
    refined: list[str] = []
    for u in out:
        if len(u) > 1500 and "\n" not in u.strip():
            parts = re.split(r"(?<=[.!?])\s+", u)
            refined.extend(p + " " for p in parts[:-1])
            refined.append(parts[-1])
        else:
            refined.append(u)
    return refined


def split_chunks(text: str, c: InputClassification, s: ExtractionStrategy) -> list[Chunk]:
    """KC-4.5: ``estimated_chunks`` pieces packed greedily towards ``ceil(len/n)`` chars
    (fewer when boundaries run short, never more than 8); a table split across pieces
    repeats its header row; ``heading`` is the nearest header above the piece."""
    n = s.estimated_chunks
    if s.mode is not ExtractionMode.CHUNKED or n <= 1:
        return [Chunk(1, 1, text, None)]
    structured = c.input_type is InputType.STRUCTURED
    units = _units(text, structured)
    target = math.ceil(len(text) / n)
    pieces: list[list[str]] = [[]]
    size = 0
    for u in units:
        if pieces[-1] and size + len(u) > target and len(pieces) < min(n, 8):
            pieces.append([])
            size = 0
        pieces[-1].append(u)
        size += len(u) + 1
    texts = ["\n".join(p) for p in pieces if any(x.strip() for x in p)]
    chunks: list[Chunk] = []
    last_heading: Optional[str] = None
    open_table_header: Optional[str] = None  # header row of a table the previous piece ended inside
    for piece in texts:
        lines = [ln for ln in piece.split("\n")]
        nonempty = [ln for ln in lines if ln.strip()]
        first = nonempty[0] if nonempty else ""
        body = piece
        if open_table_header is not None and _is_table(first):
            body = open_table_header + "\n" + piece
        heading = first.strip() if _is_header(first) else last_heading
        table_header = open_table_header if _is_table(first) else None
        prev_table = _is_table(first) and open_table_header is not None
        for ln in lines:
            if _is_header(ln):
                last_heading = ln.strip()
            if _is_table(ln):
                if not prev_table:
                    table_header = ln
                prev_table = True
            elif ln.strip():
                prev_table = False
                table_header = None
        open_table_header = table_header if nonempty and _is_table(nonempty[-1]) else None
        chunks.append(Chunk(0, 0, body, heading))
    count = len(chunks)
    for i, ch in enumerate(chunks, 1):
        ch.index, ch.count = i, count
    return chunks
