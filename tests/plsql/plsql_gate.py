"""Helpers of the static PL/SQL gate: which files are checked, and how ParseOra's known
false positives on 23ai syntax are masked (ORACLE_NOTES 13.1).

Masking rules are an explicit, reviewed allow-list. Each rule rewrites one construct that
ParseOra 0.1.x does not model into an equivalent it does, **token by token** with
:func:`oramem.oracle.scripts.tokenize` (so strings and comments are never touched) and
with the same length and line breaks (so reported lines and columns stay right). Whole
files or statements are never skipped.

| rule | construct (23ai) | rewritten to | why |
|---|---|---|---|
| ``vector_type`` | ``VECTOR(384, FLOAT32)``, ``VECTOR(*, INT8)``, ``VECTOR(n, fmt, SPARSE)`` | ``VECTOR`` | "unexpected token in the type's size" |
| ``fetch_approx`` | ``FETCH APPROX FIRST``/``FETCH EXACT FIRST`` (also ``NEXT``), and a following ``ROWS ONLY WITH TARGET ACCURACY n [PARAMETERS (...)]`` | ``FETCH FIRST … ROWS ONLY`` | "unexpected tokens after the statement" |
| ``json_transform`` | ``JSON_TRANSFORM(...)`` | ``NULL`` | its ``SET '$.a' = v`` operations are not modelled |

Statements that ParseOra keeps "as tokens" (a warning, not an error) are accepted only when
they start with one of :data:`TOKEN_ONLY_PREFIXES` (vector/search/hybrid index DDL and a
few administrative statements); any other unmodelled statement fails the gate.
"""

from __future__ import annotations

import re
from pathlib import Path

from .plsql_parse import Token, significant, tokenize

REPO = Path(__file__).resolve().parents[2]
SOURCE_DIRS = ("ddl", "plsql")
SUFFIXES = (".sql", ".pks", ".pkb")

VECTOR_FORMATS = {"INT8", "FLOAT32", "FLOAT64", "BINARY", "*"}
VECTOR_STORAGE = {"SPARSE", "DENSE"}

TOKEN_ONLY_PREFIXES = (
    "CREATE VECTOR INDEX",
    "CREATE SEARCH INDEX",
    "CREATE HYBRID VECTOR INDEX",
    "ALTER INDEX",
    "ALTER SESSION",
    "ALTER SYSTEM",
    "CREATE USER",
    "ALTER USER",
    "DROP USER",
    "CREATE OR REPLACE DIRECTORY",
    "CREATE DIRECTORY",
)


def source_files(root: Path = REPO) -> list[Path]:
    out: list[Path] = []
    for d in SOURCE_DIRS:
        base = root / d
        if base.is_dir():
            out.extend(p for p in base.rglob("*") if p.suffix in SUFFIXES and p.is_file())
    return sorted(out)


def _blank(text: str) -> str:
    return re.sub(r"[^\n]", " ", text)


def mask_known_false_positives(text: str) -> tuple[str, dict[str, int]]:
    """``text`` with the allow-listed constructs rewritten; also how often each rule fired."""
    toks = tokenize(text)
    out = [t.text for t in toks]
    sig = [(i, t) for i, t in enumerate(toks) if t.kind not in ("ws", "comment")]
    counts = {"vector_type": 0, "fetch_approx": 0, "json_transform": 0}
    k = 0
    while k < len(sig):
        i, t = sig[k]
        u = t.upper if t.kind == "name" else t.text
        nxt = [s[1] for s in sig[k + 1 : k + 8]]
        # vector_type: VECTOR ( dim|* , fmt|* [, SPARSE|DENSE] )
        if u == "VECTOR" and nxt[:1] and nxt[0].text == "(":
            inner: list = []
            for s in nxt[1:]:
                if s.text == ")":
                    break
                inner.append(s)
            else:
                inner = []
            words = [s.upper if s.kind == "name" else s.text for s in inner]
            ok = (
                len(words) in (3, 5)
                and (words[0] == "*" or (inner[0].kind == "number" and words[0].isdigit()))
                and words[1] == ","
                and words[2] in VECTOR_FORMATS
                and (len(words) == 3 or (words[3] == "," and words[4] in VECTOR_STORAGE))
            )
            if ok:
                first = sig[k + 1][0]
                last = sig[k + 1 + len(inner) + 1][0]
                for j in range(first, last + 1):
                    out[j] = _blank(out[j])
                counts["vector_type"] += 1
                k += len(inner) + 3
                continue
        # fetch_approx: FETCH APPROX|EXACT FIRST|NEXT
        if u == "FETCH" and len(nxt) >= 2 and nxt[0].upper in ("APPROX", "APPROXIMATE", "EXACT") \
                and nxt[1].upper in ("FIRST", "NEXT"):
            out[sig[k + 1][0]] = _blank(out[sig[k + 1][0]])
            counts["fetch_approx"] += 1
            k += 2
            # ... ROWS ONLY WITH TARGET ACCURACY n [PARAMETERS (...)] -> ... ROWS ONLY
            m = k
            while m < len(sig) and sig[m][1].upper not in ("ONLY", ";") and m < k + 8:
                m += 1
            tail = [s[1].upper for s in sig[m + 1 : m + 4]]
            if m < len(sig) and sig[m][1].upper == "ONLY" and tail == ["WITH", "TARGET", "ACCURACY"] \
                    and m + 4 < len(sig) and sig[m + 4][1].kind == "number":
                last = m + 4
                if last + 2 < len(sig) and sig[last + 1][1].upper == "PARAMETERS" and sig[last + 2][1].text == "(":
                    depth, q = 0, last + 2
                    while q < len(sig):
                        depth += {"(": 1, ")": -1}.get(sig[q][1].text, 0)
                        if depth == 0:
                            break
                        q += 1
                    last = q
                for j in range(sig[m + 1][0], sig[last][0] + 1):
                    out[j] = _blank(out[j])
                k = last + 1
            continue
        # json_transform: JSON_TRANSFORM ( ... ) -> NULL
        if u == "JSON_TRANSFORM" and nxt[:1] and nxt[0].text == "(":
            depth, m = 0, k + 1
            while m < len(sig):
                if sig[m][1].text == "(":
                    depth += 1
                elif sig[m][1].text == ")":
                    depth -= 1
                    if depth == 0:
                        break
                m += 1
            if m < len(sig):
                start, end = i, sig[m][0]
                span = "".join(out[start : end + 1])
                out[start] = "NULL" + _blank(span)[4:] if len(span) >= 4 else span
                for j in range(start + 1, end + 1):
                    out[j] = ""
                counts["json_transform"] += 1
                k = m + 1
                continue
        k += 1
    return "".join(out), counts


#: oramem's floor is the 23ai line (ORACLE_NOTES 1.1); ParseOra reports newer constructs as
#: warnings, which fail the gate like errors.
TARGET_VERSION = "23ai"
_PARSE_CHILD = (
    "import json, sys, parseora; "
    f"sys.stdout.write(json.dumps(parseora.parse(sys.stdin.read(), version={TARGET_VERSION!r})))"
)
PARSE_MEMORY_LIMIT = 1 << 30  # bytes of address space for the parser process
PARSE_TIMEOUT = 120  # seconds


def _limit_memory() -> None:  # runs in the child before exec
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (PARSE_MEMORY_LIMIT, PARSE_MEMORY_LIMIT))


def run_parseora(text: str) -> tuple[list[dict] | None, str]:
    """ParseOra's statements for ``text``, parsed in a child process with a memory and
    time limit: ParseOra 0.1.8 aborts (tries to allocate 2 GiB) on some malformed input,
    e.g. ``CREATE TABLE t (a NUMBER));``. Returns (statements, '') or (None, why)."""
    import json
    import subprocess
    import sys

    try:
        proc = subprocess.run(
            [sys.executable, "-c", _PARSE_CHILD],
            input=text,
            capture_output=True,
            text=True,
            timeout=PARSE_TIMEOUT,
            preexec_fn=_limit_memory,
        )
    except subprocess.TimeoutExpired:
        return None, f"ParseOra did not finish within {PARSE_TIMEOUT}s"
    if proc.returncode != 0:
        tail = (proc.stderr.strip().splitlines() or ["no output"])[0]
        return None, (
            f"ParseOra crashed (exit code {proc.returncode}: {tail}); it does so on some malformed input, "
            "e.g. an extra ')' in CREATE TABLE - see the structural check's findings for this file"
        )
    return json.loads(proc.stdout), ""


def parse_errors(text: str) -> list[str]:
    """ParseOra errors of a whole script after masking, plus unmodelled statements that
    are not in the allow-list; each as 'line L col C: message'. A parser crash is an error."""
    masked, _ = mask_known_false_positives(text)
    statements, why = run_parseora(masked)
    if statements is None:
        return [why]
    problems: list[str] = []
    for st in statements:
        for e in st.get("errors", []):
            problems.append(f"line {e['line']} col {e['col']}: {e['message']} [{st['statement']}]")
        for w in st.get("warnings", []):
            if "not modelled" not in w["message"]:
                problems.append(f"line {w['line']} col {w['col']}: {w['message']} (target {TARGET_VERSION})")
                continue
            if "not modelled" in w["message"]:
                head = " ".join(t.upper for t in significant(tokenize(st["text"]))[:4])
                if not head.startswith(TOKEN_ONLY_PREFIXES):
                    problems.append(
                        f"line {w['line']}: statement not modelled by the parser and not in "
                        f"TOKEN_ONLY_PREFIXES: {head[:60]!r}"
                    )
    return problems


# ---------------------------------------------------------------------------------------
# Source rules (issue 10 item 2): three classes of defect the Oracle reviews found, each a
# plain text rule over ddl/ and plsql/ so it is caught before anything runs.
#
# (a) SQL*Plus SQLPREFIX: a line whose first non-blank character is ``#`` is run by
#     SQL*Plus as a SQL*Plus command, even inside a SQL statement or PL/SQL block being
#     entered (SQL*Plus User's Guide, SET SQLPRE[FIX] {# | c}); the line is lost from the
#     unit. The rule reads raw lines, so string literals and comments count too.
# (b) Length semantics: NLS_LENGTH_SEMANTICS defaults to BYTE (Database Reference,
#     NLS_LENGTH_SEMANTICS), so ``VARCHAR2(n)`` holds n *bytes* while oramem checks ids and
#     texts in characters (review S8/F7). Every ``VARCHAR2(n)``/``VARCHAR(n)``/``CHAR(n)``
#     - in code and in SQL text inside string literals (DDL templates, JSON_TABLE columns)
#     - must say ``n CHAR``; ``n BYTE`` is allowed only on a line that says why with a
#     ``-- bytes:`` comment (the value is cut or checked in bytes before it is stored).
#     ``VARCHAR2(32767)`` is exempt: that PL/SQL maximum is in bytes whatever the
#     qualifier, and rule (c) bounds what grows into it.
# (c) Dynamic SQL that grows with user input: a self-append ``v := v || ...`` to a
#     variable declared VARCHAR2 is allowed only on a line (or the line above it) that
#     states the bound with a ``-- bounded:`` comment. The filter compiler appends through
#     ``oramem_filter.cat``, which raises -20004 past ``gc_max_sql_bytes`` (review S4/F12).
#
# Files owned by another work item that still break a rule are listed, with the finding
# that fixes them, in the PENDING_* maps below. An entry is removed when its file is fixed:
# a test fails when a listed file no longer needs its entry, so the lists only shrink.
# ---------------------------------------------------------------------------------------

SQLPREFIX_CHAR = "#"

#: file -> why it may still break rule (a); remove the entry with the fix.
PENDING_SQLPREFIX: dict[str, str] = {
}
#: file -> why it may still break rule (b).
PENDING_BYTE_SEMANTICS: dict[str, str] = {
}
#: file -> why it may still break rule (c).
PENDING_UNBOUNDED_SQL: dict[str, str] = {
}


def _rel(path: Path, root: Path = REPO) -> str:
    return path.relative_to(root).as_posix()


def _code_without_comments(text: str) -> str:
    """``text`` with every comment blanked (same length and line breaks)."""
    return "".join(_blank(t.text) if t.kind == "comment" else t.text for t in tokenize(text))


def _line_of(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


def sqlprefix_findings(text: str) -> list[str]:
    """Rule (a): lines whose first non-blank character is the SQLPREFIX character."""
    return [
        f"line {n}: starts with {SQLPREFIX_CHAR!r}, which SQL*Plus runs as a SQL*Plus command "
        "(SQLPREFIX) and drops from the statement; move the text off the line start"
        for n, line in enumerate(text.splitlines(), 1)
        if line.lstrip().startswith(SQLPREFIX_CHAR)
    ]


_LENGTH_RE = re.compile(r"\b(VARCHAR2|VARCHAR|CHAR)\s*\(\s*(\d+)\s*(BYTE|CHAR)?\s*\)", re.IGNORECASE)


def byte_semantics_findings(text: str) -> list[str]:
    """Rule (b): sized character types without CHAR semantics (or a justified BYTE)."""
    code = _code_without_comments(text)
    lines = text.splitlines()
    out = []
    for m in _LENGTH_RE.finditer(code):
        size, qual = m.group(2), (m.group(3) or "").upper()
        if size == "32767" or qual == "CHAR":
            continue
        n = _line_of(code, m.start())
        if qual == "BYTE" and "-- bytes:" in lines[n - 1]:
            continue
        out.append(
            f"line {n}: {m.group(0)} uses byte length semantics (NLS_LENGTH_SEMANTICS defaults to "
            f"BYTE); write {m.group(1)}({size} CHAR), or {size} BYTE with a '-- bytes:' comment "
            "saying where the value is cut or checked in bytes"
        )
    return out


_SELF_APPEND_RE = re.compile(r"\b([A-Za-z_][A-Za-z0-9_]*)\s*:=\s*\1\s*\|\|")


def unbounded_growth_findings(text: str) -> list[str]:
    """Rule (c): ``v := v || ...`` on a VARCHAR2 variable without a stated bound."""
    code = _code_without_comments(text)
    lines = text.splitlines()
    out = []
    for m in _SELF_APPEND_RE.finditer(code):
        name = m.group(1)
        if not re.search(rf"\b{re.escape(name)}\s+VARCHAR2\b", code, re.IGNORECASE):
            continue  # a CLOB (or other) variable grows without a byte limit
        n = _line_of(code, m.start())
        if "-- bounded:" in lines[n - 1] or (n > 1 and "-- bounded:" in lines[n - 2]):
            continue
        out.append(
            f"line {n}: {name} := {name} || ... grows a VARCHAR2 (ORA-06502 past 32767 bytes); build "
            "it in a CLOB, append through a checked helper that raises the documented error, or "
            "state the bound in a '-- bounded:' comment on the line or the line above"
        )
    return out


#: file -> why it may still break rule (d).
PENDING_DECLARATION_ORDER: dict[str, str] = {
}

_TOP_END_RE = re.compile(r"^   END\s+\w+\s*;", re.MULTILINE)
_TOP_ITEM_RE = re.compile(
    r"^   (?!(?:PROCEDURE|FUNCTION|CURSOR|END|BEGIN|IS|AS|EXCEPTION|RETURN|WHEN)\b)"
    r"(?:(?:TYPE|SUBTYPE|PRAGMA)\b|[A-Za-z_]\w*[ \t]+(?:CONSTANT\b|EXCEPTION\b|[A-Za-z_]))",
    re.MULTILINE | re.IGNORECASE)


def declaration_order_findings(text: str) -> list[str]:
    """Rule (d): in a package body, a type, variable, constant, exception or pragma declared
    after a subprogram body. The declare section is ``item_list_1 [item_list_2]`` and
    item_list_2 holds only cursor, function and procedure declarations and definitions
    (PL/SQL Language Reference, block / declare_section, item_list_2): Oracle refuses it with
    PLS-00103, and the parser used by this gate accepts it. Top level (three-space indent)."""
    if not re.search(r"\bCREATE\s+OR\s+REPLACE\s+PACKAGE\s+BODY\b", text, re.IGNORECASE):
        return []
    code = _code_without_comments(text)
    first = _TOP_END_RE.search(code)
    if first is None:
        return []
    return [
        f"line {_line_of(code, m.start())}: {code[m.start():code.index(chr(10), m.start())].strip()[:60]!r} is "
        "declared after a subprogram body (PLS-00103): move it above the package body's first subprogram"
        for m in _TOP_ITEM_RE.finditer(code, first.end())
    ]


#: PL/SQL Language Reference (12.2 / 18c / 11.2), Appendix D "PL/SQL Reserved Words and
#: Keywords", Table D-1 PL/SQL Reserved Words: "Reserved words can never be used as
#: identifiers" (Table D-2's keywords can, and are not checked here).
PLSQL_RESERVED_WORDS = frozenset("""
    ALL ALTER AND ANY AS ASC AT BEGIN BETWEEN BY CASE CHECK CLUSTERS CLUSTER COLAUTH COLUMNS
    COMPRESS CONNECT CRASH CREATE CURSOR DECLARE DEFAULT DESC DISTINCT DROP ELSE END EXCEPTION
    EXCLUSIVE FETCH FOR FROM FUNCTION GOTO GRANT GROUP HAVING IDENTIFIED IF IN INDEX INDEXES
    INSERT INTERSECT INTO IS LIKE LOCK MINUS MODE NOCOMPRESS NOT NOWAIT NULL OF ON OPTION OR
    ORDER OVERLAPS PROCEDURE PUBLIC RESOURCE REVOKE SELECT SHARE SIZE SQL START SUBTYPE TABAUTH
    TABLE THEN TO TYPE UNION UNIQUE UPDATE VALUES VIEW VIEWS WHEN WHERE WITH
""".split())

#: the data types a declaration in these sources starts with (besides the TYPE / SUBTYPE names
#: the sources declare and anything ending %TYPE / %ROWTYPE)
_BUILTIN_TYPES = frozenset("""
    VARCHAR2 VARCHAR NVARCHAR2 CHAR NCHAR CLOB NCLOB BLOB NUMBER INTEGER PLS_INTEGER
    BINARY_INTEGER SIMPLE_INTEGER NATURAL POSITIVE BOOLEAN DATE TIMESTAMP INTERVAL RAW ROWID
    JSON JSON_ELEMENT_T JSON_OBJECT_T JSON_ARRAY_T JSON_SCALAR_T JSON_KEY_LIST VECTOR
    SYS_REFCURSOR BINARY_DOUBLE BINARY_FLOAT FLOAT
""".split())

#: tokens that may follow a parameter's name (its mode, then its type)
_PARAM_MODES = frozenset({"IN", "OUT", "NOCOPY"})


def _declared_types(text: str) -> set[str]:
    toks = [t for t in significant(tokenize(text)) if t.kind != "cc"]
    return {toks[i + 1].upper for i, t in enumerate(toks[:-1])
            if t.upper in ("TYPE", "SUBTYPE") and toks[i + 1].kind in ("name", "qname")}


_SOURCE_TYPES: set[str] = set()


def _known_types(text: str) -> set[str]:
    """The built-in types, the TYPE / SUBTYPE names of every source file (a body names its
    spec's and other packages' types qualified, ``oramem_registry.store_t``) and of ``text``."""
    if not _SOURCE_TYPES:
        for path in source_files():
            _SOURCE_TYPES.update(_declared_types(path.read_text()))
    return set(_BUILTIN_TYPES) | _SOURCE_TYPES | _declared_types(text)


def declared_names(text: str) -> list[tuple[Token, str]]:
    """Every identifier ``text`` declares, with what it names: a variable, constant or
    exception (``name [CONSTANT] type`` / ``name EXCEPTION`` at the start of a declaration), a
    parameter (``(`` or ``,`` then ``name`` then a mode or a type), a type, subtype, cursor,
    procedure or function name, or a FOR loop index. Comments and strings are never read
    (tokens of :func:`tokenize`). Not a grammar: rule (e)'s net, checked against
    :func:`~.plsql_parse.package_signatures` by a test."""
    toks = [t for t in significant(tokenize(text)) if t.kind != "cc"]
    types = _known_types(text)

    def is_type(j: int) -> bool:
        if j >= len(toks) or toks[j].kind not in ("name", "qname"):
            return False
        k = j   # a dotted name (pkg.type_t, tab.col%TYPE): its last part, or a %TYPE / %ROWTYPE
        while k + 2 < len(toks) and toks[k + 1].text == "." and toks[k + 2].kind in ("name", "qname"):
            k += 2
        if k + 2 < len(toks) and toks[k + 1].text == "%" and toks[k + 2].upper in ("TYPE", "ROWTYPE"):
            return True
        return toks[k].upper in types

    out = []
    for i, t in enumerate(toks):
        if t.kind != "name":
            continue
        prev = toks[i - 1] if i else None
        nxt = toks[i + 1] if i + 1 < len(toks) else None
        what = None
        if prev is not None and prev.kind == "name" and prev.upper in ("PROCEDURE", "FUNCTION", "CURSOR", "TYPE",
                                                                         "SUBTYPE") \
                and (i < 2 or toks[i - 2].upper not in ("%", "END", "PACKAGE", "BODY")):
            what = f"a {prev.upper.lower()} name"
        elif prev is not None and prev.upper == "FOR" and nxt is not None and nxt.upper == "IN":
            what = "a FOR loop index"
        elif prev is not None and prev.text in ("(", ",") and nxt is not None \
                and (nxt.upper in _PARAM_MODES or is_type(i + 1)):
            what = "a parameter name"
        elif (prev is None or prev.text == ";" or prev.upper in ("IS", "AS", "DECLARE")) and nxt is not None \
                and t.upper not in ("TYPE", "SUBTYPE", "EXCEPTION", "CURSOR", "PROCEDURE", "FUNCTION", "PRAGMA") \
                and (nxt.upper in ("CONSTANT", "EXCEPTION") or is_type(i + 1)):
            what = "a variable, constant or exception name"
        if what:
            out.append((t, what))
    return out


def reserved_identifier_findings(text: str) -> list[str]:
    """Rule (e) (fake40): a PL/SQL reserved word (:data:`PLSQL_RESERVED_WORDS`) declared as an
    identifier (:func:`declared_names`). Oracle refuses it at compile time (PLS-00103); the
    gate's parsers do not know the list."""
    return [f"line {t.line}: {t.text} is {what}, and {t.upper} is a PL/SQL reserved word (PL/SQL Language "
            "Reference, Table D-1: reserved words can never be identifiers; PLS-00103 at compile time); "
            f"rename it (e.g. l_{t.text.lower()})"
            for t, what in declared_names(text) if t.upper in PLSQL_RESERVED_WORDS]


#: file -> why it may still break rule (e).
PENDING_RESERVED_IDENTIFIERS: dict[str, str] = {
}


SOURCE_RULES = {
    "reserved_identifiers": (reserved_identifier_findings, PENDING_RESERVED_IDENTIFIERS),
    "declaration_order": (declaration_order_findings, PENDING_DECLARATION_ORDER),
    "sqlprefix": (sqlprefix_findings, PENDING_SQLPREFIX),
    "byte_semantics": (byte_semantics_findings, PENDING_BYTE_SEMANTICS),
    "unbounded_sql": (unbounded_growth_findings, PENDING_UNBOUNDED_SQL),
}
