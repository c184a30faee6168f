"""Helpers of the static PL/SQL gate: which files are checked, and how ParseOra's known
false positives on 23ai syntax are masked (ORACLE_NOTES 13.1).

Masking rules are an explicit, reviewed allow-list. Each rule rewrites one construct that
ParseOra 0.1.x does not model into an equivalent it does, **token by token** with
:func:`oramem.oracle.plsql_parse.tokenize` (so strings and comments are never touched) and
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

from oramem.oracle.plsql_parse import significant, tokenize

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
