"""Input classification, strategy selection and chunking (KC-4.3 to KC-4.5). Pure."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Optional

from ..types import ExtractionMode, ExtractionStrategy, InputClassification, InputType

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


def _sections(text: str, structured: bool) -> list[tuple[Optional[str], list[str]]]:
    """(header line, body lines) in order; STRUCTURED input starts a section at each header,
    LONG input is one section without a header."""
    sections: list[tuple[Optional[str], list[str]]] = [(None, [])]
    for line in text.split("\n"):
        if structured and _is_header(line):
            sections.append((line, []))
        else:
            sections[-1][1].append(line)
    return [(h, body) for h, body in sections if h is not None or any(ln.strip() for ln in body)]


def _paragraphs(lines: list[str]) -> list[list[str]]:
    """Runs of non-blank lines (a table is one paragraph unless blank lines cut it)."""
    out: list[list[str]] = [[]]
    for line in lines:
        if line.strip():
            out[-1].append(line)
        elif out[-1]:
            out.append([])
    return [p for p in out if p]


def _table_head(para: list[str]) -> list[str]:
    """The lines a continued table repeats: its first row, and the separator row after it."""
    head = para[:1]
    if len(para) > 1 and re.fullmatch(r"[\s|:\-]+", para[1]):
        head.append(para[1])
    return head


def _words(sentence: str, limit: int) -> list[str]:
    """A sentence longer than ``limit``, cut at spaces into runs of at most ``limit`` chars (a
    single word longer than that stays whole); a shorter sentence as it is."""
    if len(sentence) <= limit:
        return [sentence]
    runs: list[str] = []
    current = ""
    for word in sentence.split(" "):
        if current and len(current) + 1 + len(word) > limit:
            runs.append(current)
            current = word
        else:
            current = f"{current} {word}" if current else word
    runs.append(current)
    return runs


@dataclass
class _Unit:
    text: str
    header: Optional[str]  # the section this unit belongs to
    table_head: list[str]  # the table header lines to repeat if a piece starts at this unit
    is_header: bool = False
    gap: str = "\n"  # what stood between this unit and the one before it in the text


def _units(sections: list[tuple[Optional[str], list[str]]], limit: int) -> list[_Unit]:
    """Cut points, coarsest that fit: a paragraph; else its lines (a table: its rows); else, for a
    line longer than ``limit``, its sentences; for a sentence longer than that, runs of words.
    Nothing is ever cut inside a word."""
    units: list[_Unit] = []
    for header, body in sections:
        if header is not None:
            units.append(_Unit(header, header, [], is_header=True, gap="\n\n"))
        gap = "\n\n" if body and not body[0].strip() else "\n"
        for para in _paragraphs(body):
            joined = "\n".join(para)
            if len(joined) <= limit:
                units.append(_Unit(joined, header, [], gap=gap))
                gap = "\n\n"
                continue
            table = all(_is_table(ln) for ln in para)
            head = _table_head(para) if table else []
            for i, line in enumerate(para):
                repeat = head if table and i >= len(head) else []
                if len(line) <= limit:
                    units.append(_Unit(line, header, repeat, gap=gap))
                else:
                    parts = [w for part in re.split(r"(?<=[.!?])\s+", line) if part for w in _words(part, limit)]
                    units.extend(_Unit(part, header, repeat, gap=gap if j == 0 else " ") for j, part in enumerate(parts))
                gap = "\n"
            gap = "\n\n"
    return units


def _pack(units: list[_Unit], target: int) -> list[tuple[str, Optional[str]]]:
    """Greedy packing towards ``target`` chars. A piece never ends on a header (headers travel
    with what follows them); a piece that starts inside a section repeats the section's header, and
    inside a table, the table's header rows."""

    def render(items: list[tuple[str, _Unit]]) -> str:
        return "".join((gap if i else "") + u.text for i, (gap, u) in enumerate(items))

    pieces: list[tuple[str, Optional[str]]] = []
    items: list[tuple[str, _Unit]] = []  # (separator before it, unit) of the open piece
    size = 0
    after_repeat = False
    for u in units:
        has_body = any(not x.is_header for _, x in items)
        if has_body and size + len(u.gap) + len(u.text) > target:
            carried: list[tuple[str, _Unit]] = []
            while items and items[-1][1].is_header:  # trailing headers move to the next piece
                carried.insert(0, items.pop())
            body_start = next(x for _, x in items if not x.is_header)
            pieces.append((render(items), body_start.header))
            items = carried
            if not carried:  # the piece starts inside a section: repeat its header (and table head)
                repeat = ([u.header] if u.header is not None and not u.is_header else []) + u.table_head
                items.extend(("\n", _Unit(row, u.header, [], is_header=True)) for row in repeat)
                after_repeat = bool(repeat)
            size = len(render(items))
        gap = "\n" if after_repeat else u.gap
        after_repeat = False
        items.append((gap, u))
        size += len(gap) + len(u.text)
    if items:
        body = [x for _, x in items if not x.is_header]
        if not body and pieces:  # headers with no body at the very end join the last piece
            last, heading = pieces[-1]
            pieces[-1] = (f"{last}\n\n{render(items)}", heading)
        else:
            pieces.append((render(items), (body[0] if body else items[0][1]).header))
    return pieces


def split_chunks(text: str, c: InputClassification, s: ExtractionStrategy) -> list[Chunk]:
    """KC-4.5: about ``estimated_chunks`` pieces packed greedily towards ``ceil(len/n)`` chars
    (fewer when boundaries run short; ``n`` is at most 8). A section longer than the target is cut
    inside its body and every piece after the first repeats its header; a table cut across pieces
    repeats its header rows; no piece holds only headers. A piece exceeds the target by at most the
    repeated header lines (a sentence longer than the target is cut between words, a word never); the
    target widens by 5 % steps when the repeated headers would otherwise need more than ``n`` pieces.
    ``heading`` is the header of the section the piece starts in."""
    n = s.estimated_chunks
    if s.mode is not ExtractionMode.CHUNKED or n <= 1:
        return [Chunk(1, 1, text, None)]
    sections = _sections(text, c.input_type is InputType.STRUCTURED)
    target = math.ceil(len(text) / n)
    pieces = _pack(_units(sections, target), target)
    while len(pieces) > n:  # repeated headers cost room: widen the target until n pieces suffice
        target = math.ceil(target * 1.05)
        pieces = _pack(_units(sections, target), target)
    count = len(pieces)
    return [Chunk(i, count, body, heading) for i, (body, heading) in enumerate(pieces, 1)]
