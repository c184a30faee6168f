"""SQL*Plus scripts, statement by statement: what ``oramem db install`` needs at run time.

- :func:`tokenize` — Oracle lexical tokens (strings incl. ``q'[...]'``, quoted names,
  comments, conditional-compilation directives), with line numbers; :func:`significant`
  drops whitespace and comments;
- :func:`split_script` — a script split the way SQL*Plus runs it: SQL ends at ``;``,
  PL/SQL units (``DECLARE``/``BEGIN``/``CREATE PACKAGE``/``TYPE``/…) end at a line holding
  only ``/``, and client commands (``SET``, ``PROMPT``, ``@@file``, …) take one line. The
  installer (:mod:`oramem.oracle.admin`) runs scripts statement by statement with it.

The structural PL/SQL checker of the static gate (END labels, spec/body agreement) is a test
tool and lives in ``tests/plsql/plsql_parse.py``, outside the package.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional

from ..errors import Error

__all__ = ["Token", "ScriptItem", "PlsqlSyntaxError", "tokenize", "significant", "split_script"]


class PlsqlSyntaxError(Error, ValueError):
    """A lexical or structural problem, with the 1-based line it was found on."""

    def __init__(self, message: str, line: int) -> None:
        super().__init__(f"line {line}: {message}")
        self.line = line
        self.reason = message


@dataclass(frozen=True)
class Token:
    kind: str  # ws | comment | string | qname | name | number | op | cc (conditional compilation)
    text: str
    line: int

    @property
    def upper(self) -> str:
        """Upper-cased text for names (quoted names keep their case, without quotes)."""
        if self.kind == "qname":
            return self.text[1:-1]
        if self.kind in ("name", "cc"):
            return self.text.upper()
        return self.text


_OPS = (":=", "=>", "..", "||", "<<", ">>", "!=", "<>", "<=", ">=", "**", "^=", "~=")
_Q_CLOSE = {"[": "]", "(": ")", "{": "}", "<": ">"}
_NAME_RE = re.compile(r"[A-Za-z][A-Za-z0-9_$#]*")
_NUM_RE = re.compile(r"\d+(?:\.(?!\.)\d*)?(?:[eE][+-]?\d+)?[fFdD]?|\.\d+(?:[eE][+-]?\d+)?")
_CC_RE = re.compile(r"\$\$?[A-Za-z][A-Za-z0-9_]*")


def tokenize(text: str, first_line: int = 1) -> list[Token]:
    """Every token of ``text``; joined in order the texts give back ``text`` exactly.
    Raises :class:`PlsqlSyntaxError` for an unterminated string, quoted name or comment."""
    out: list[Token] = []
    i, n, line = 0, len(text), first_line
    while i < n:
        c = text[i]
        start, start_line = i, line
        if c.isspace():
            while i < n and text[i].isspace():
                i += 1
            kind = "ws"
        elif text.startswith("--", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
            kind = "comment"
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            if j < 0:
                raise PlsqlSyntaxError("unterminated /* comment", line)
            i = j + 2
            kind = "comment"
        elif c in "nNqQ" and _is_q_quote(text, i):
            k = i + 1 if c in "qQ" else i + 2
            opener = text[k + 1]
            closer = _Q_CLOSE.get(opener, opener) + "'"
            j = text.find(closer, k + 2)
            if j < 0:
                raise PlsqlSyntaxError(f"unterminated q'{opener}...{closer}' literal", line)
            i = j + 2
            kind = "string"
        elif c == "'" or (c in "nN" and text.startswith("'", i + 1)):
            i = i + 1 if c == "'" else i + 2
            while True:
                j = text.find("'", i)
                if j < 0:
                    raise PlsqlSyntaxError("unterminated string literal", start_line)
                if text.startswith("''", j):
                    i = j + 2
                    continue
                i = j + 1
                break
            kind = "string"
        elif c == '"':
            j = text.find('"', i + 1)
            if j < 0:
                raise PlsqlSyntaxError("unterminated quoted name", line)
            i = j + 1
            kind = "qname"
        elif c == "$":
            m = _CC_RE.match(text, i)
            if not m:
                i += 1
                kind = "op"
            else:
                i = m.end()
                kind = "cc"
        elif c.isalpha():
            i = _NAME_RE.match(text, i).end()  # type: ignore[union-attr]
            kind = "name"
        elif c.isdigit() or (c == "." and i + 1 < n and text[i + 1].isdigit()):
            i = _NUM_RE.match(text, i).end()  # type: ignore[union-attr]
            kind = "number"
        else:
            for op in _OPS:
                if text.startswith(op, i):
                    i += len(op)
                    break
            else:
                i += 1
            kind = "op"
        chunk = text[start:i]
        out.append(Token(kind, chunk, start_line))
        line += chunk.count("\n")
    return out


def _is_q_quote(text: str, i: int) -> bool:
    k = i + 1 if text[i] in "qQ" else i + 2
    if text[i] in "nN" and not (k - 1 < len(text) and text[k - 1] in "qQ"):
        return False
    if i > 0 and (text[i - 1].isalnum() or text[i - 1] in "_$#"):
        return False
    return text.startswith("'", k) and k + 1 < len(text) and not text[k + 1].isspace()


def significant(tokens: list[Token]) -> list[Token]:
    """Tokens without whitespace and comments."""
    return [t for t in tokens if t.kind not in ("ws", "comment")]


# --------------------------------------------------------------------------------------
# SQL*Plus script splitting
# --------------------------------------------------------------------------------------

@dataclass(frozen=True)
class ScriptItem:
    """One thing SQL*Plus runs: ``kind`` is ``sql`` (text without the ``;``), ``plsql``
    (text of the unit, ending ``END;``), or ``sqlplus`` (a client command line)."""

    kind: str
    text: str
    line: int

    @property
    def command(self) -> Optional[str]:
        """For ``sqlplus`` items, the upper-cased command word (``@@`` for includes)."""
        if self.kind != "sqlplus":
            return None
        s = self.text.lstrip()
        if s.startswith("@@"):
            return "@@"
        if s.startswith("@"):
            return "@"
        return s.split(None, 1)[0].upper()


_SQLPLUS_WORDS = {
    "SET", "WHENEVER", "PROMPT", "PRO", "REM", "REMARK", "SPOOL", "EXIT", "QUIT", "SHOW", "SHO",
    "DEFINE", "DEF", "UNDEFINE", "UNDEF", "COLUMN", "COL", "START", "PAUSE", "EXEC", "EXECUTE",
    "CONNECT", "CONN", "VARIABLE", "VAR", "PRINT", "ACCEPT", "CLEAR", "BREAK", "TTITLE", "BTITLE",
    "TIMING", "HOST", "SHUTDOWN", "STARTUP", "DISCONNECT", "DISC",
}
_PLSQL_START = re.compile(
    r"(?:DECLARE|BEGIN)\b|<<|CREATE\s+(?:OR\s+REPLACE\s+)?(?:(?:NON)?EDITIONABLE\s+)?"
    r"(?:PACKAGE|PROCEDURE|FUNCTION|TRIGGER|TYPE|LIBRARY|JAVA)\b",
    re.IGNORECASE,
)
_SLASH_LINE = re.compile(r"[ \t]*/[ \t]*(?:\n|$)")


def split_script(text: str) -> list[ScriptItem]:
    """Split a SQL*Plus script into the items SQL*Plus would run, in order.

    ``EXECUTE x`` client commands are kept as ``sqlplus`` items (callers decide what to do);
    a bare ``/`` re-runs the buffer in SQL*Plus and is ignored here."""
    items: list[ScriptItem] = []
    i, n = 0, len(text)
    line = 1
    while i < n:
        # skip blank space and comments between statements
        m = re.compile(r"\s+").match(text, i)
        if m:
            line += m.group().count("\n")
            i = m.end()
            continue
        if text.startswith("--", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
            continue
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            if j < 0:
                raise PlsqlSyntaxError("unterminated /* comment", line)
            line += text.count("\n", i, j)
            i = j + 2
            continue
        m = _SLASH_LINE.match(text, i)
        line_start = text.rfind("\n", 0, i) + 1
        if m and not text[line_start:i].strip():
            line += m.group().count("\n")
            i = m.end()
            continue
        eol = text.find("\n", i)
        eol = n if eol < 0 else eol
        first_word = re.match(r"@@?|[A-Za-z]+", text[i:eol])
        word = first_word.group().upper() if first_word else ""
        if word in ("@", "@@") or (word in _SQLPLUS_WORDS and not _is_sql_set(text, i, word)):
            # client command: one line, '-' at the end continues it
            j = eol
            while text[i:j].rstrip().endswith(" -") and j < n:
                nxt = text.find("\n", j + 1)
                j = n if nxt < 0 else nxt
            items.append(ScriptItem("sqlplus", text[i:j].strip(), line))
            line += text.count("\n", i, j)
            i = j
            continue
        plsql = bool(_PLSQL_START.match(text, i))
        j, end_at, stmt_lines = _scan_statement(text, i, plsql, line)
        body = text[i:j].rstrip()
        if plsql:
            items.append(ScriptItem("plsql", body, line))
        elif body:
            items.append(ScriptItem("sql", body, line))
        line += stmt_lines
        i = end_at
    return items


def _is_sql_set(text: str, i: int, word: str) -> bool:
    # Only SET and EXEC-like words collide with nothing in SQL at statement start except
    # "SET TRANSACTION"/"SET ROLE"/"SET CONSTRAINTS", which are SQL.
    if word != "SET":
        return False
    return bool(re.match(r"SET\s+(TRANSACTION|ROLE|CONSTRAINTS?)\b", text[i:], re.IGNORECASE))


def _scan_statement(text: str, i: int, plsql: bool, line: int) -> tuple[int, int, int]:
    """Scan from ``i`` to the statement's end. Returns (end of text, resume index, lines
    consumed)."""
    n = len(text)
    start = i
    while i < n:
        c = text[i]
        if c == "\n":
            m = _SLASH_LINE.match(text, i + 1)
            if m:
                return i, m.end(), text.count("\n", start, m.end())
            i += 1
        elif text.startswith("--", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            if j < 0:
                raise PlsqlSyntaxError("unterminated /* comment", line + text.count("\n", start, i))
            i = j + 2
        elif c in "nNqQ" and _is_q_quote(text, i):
            k = i + 1 if c in "qQ" else i + 2
            closer = _Q_CLOSE.get(text[k + 1], text[k + 1]) + "'"
            j = text.find(closer, k + 2)
            if j < 0:
                raise PlsqlSyntaxError("unterminated q-quoted literal", line + text.count("\n", start, i))
            i = j + 2
        elif c == "'":
            j = i + 1
            while True:
                j = text.find("'", j)
                if j < 0:
                    raise PlsqlSyntaxError("unterminated string literal", line + text.count("\n", start, i))
                if text.startswith("''", j):
                    j += 2
                    continue
                break
            i = j + 1
        elif c == '"':
            j = text.find('"', i + 1)
            if j < 0:
                raise PlsqlSyntaxError("unterminated quoted name", line + text.count("\n", start, i))
            i = j + 1
        elif c.isalnum() or c in "_$#":
            m = re.compile(r"[A-Za-z0-9_$#]+").match(text, i)
            i = m.end()  # type: ignore[union-attr]
        elif c == ";" and not plsql:
            return i, i + 1, text.count("\n", start, i + 1)
        else:
            i += 1
    return n, n, text.count("\n", start, n)
