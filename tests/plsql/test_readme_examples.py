"""The runnable PL/SQL examples of plsql/README.md ("Calling oramem from PL/SQL") call only
real package subprograms, as declared in plsql/*.pks: the package and subprogram exist, a
function is used as a value and a procedure as a statement, every argument is in named
notation with a real formal name, and every formal without a default is passed. Every
block parses (ParseOra, the gate's masks) and every public subprogram of the application
packages is shown at least once."""

from __future__ import annotations

import re

import pytest

from .plsql_parse import significant, split_script, tokenize

from .plsql_gate import REPO, parse_errors
from .test_static_gate import _packages

README = REPO / "plsql" / "README.md"
SECTION = "## Calling oramem from PL/SQL"
PACKAGES = ("ORAMEM_ADMIN", "ORAMEM_STORE", "ORAMEM_SEARCH", "ORAMEM_KG_JOBS")
# tokens after which a call is a statement (procedure); anything else uses its value
STATEMENT_START = {";", "BEGIN", "THEN", "ELSE", "LOOP"}


def blocks() -> list[str]:
    text = README.read_text(encoding="utf-8")
    start = text.index(SECTION)
    end = text.index("\n## ", start + len(SECTION))
    return re.findall(r"```sql\n(.*?)```", text[start:end], flags=re.S)


def calls(block: str) -> list[tuple[str, str, bool, list[tuple[str | None, str]]]]:
    """(package, subprogram, used_as_value, [(formal or None, argument text)]) of every
    oramem package call in ``block``."""
    toks = significant(tokenize(block))
    out = []
    i = 0
    while i < len(toks):
        t = toks[i]
        if (t.upper in PACKAGES and i + 2 < len(toks) and toks[i + 1].text == "."
                and toks[i + 2].kind == "name"):
            pkg, sub = t.upper, toks[i + 2].upper
            prev = toks[i - 1].upper if i else ";"
            as_value = prev not in STATEMENT_START
            args: list[tuple[str | None, str]] = []
            j = i + 3
            if j < len(toks) and toks[j].text == "(":
                depth, cur, j = 0, [], j + 1
                while j < len(toks):
                    x = toks[j]
                    if x.text == "(":
                        depth += 1
                    elif x.text == ")":
                        if depth == 0:
                            break
                        depth -= 1
                    if x.text == "," and depth == 0:
                        args.append(_arg(cur))
                        cur = []
                    else:
                        cur.append(x)
                    j += 1
                if cur:
                    args.append(_arg(cur))
            out.append((pkg, sub, as_value, args))
            i = j
        i += 1
    return out


def _arg(toks) -> tuple[str | None, str]:
    if len(toks) >= 2 and toks[1].text == "=>":
        return toks[0].upper, " ".join(t.text for t in toks[2:])
    return None, " ".join(t.text for t in toks)


def test_there_are_examples():
    assert len(blocks()) >= 10


@pytest.mark.parametrize("i", range(len(blocks())))
def test_block_parses(i):
    block = blocks()[i]
    problems = parse_errors(block)
    assert not problems, f"plsql/README.md example {i + 1}:\n  " + "\n  ".join(problems)
    kinds = [item.kind for item in split_script(block)]
    assert kinds and all(k in ("plsql", "sql") for k in kinds), kinds


def check(block: str, specs) -> list[str]:
    problems = []
    for pkg, sub, as_value, args in calls(block):
        where = f"{pkg}.{sub}"
        unit = specs.get(pkg)
        overloads = [s for s in (unit.subprograms if unit else []) if s.name == sub]
        if not overloads:
            problems.append(f"{where}: no such subprogram in plsql/{pkg.lower()}.pks")
            continue
        kind = "FUNCTION" if as_value else "PROCEDURE"
        fitting = [s for s in overloads if s.kind == kind]
        if not fitting:
            problems.append(f"{where} is used as a {kind.lower()}, the spec declares a {overloads[0].kind.lower()}")
            continue
        positional = [text for name, text in args if name is None]
        if positional:
            problems.append(f"{where}: positional arguments {positional}; use named notation")
        reasons = []
        for s in fitting:
            formals = {p.name: p for p in s.params}
            passed = {name for name, _ in args if name}
            bad = sorted(passed - set(formals))
            missing = sorted(p.name for p in s.params if p.default is None and p.name not in passed)
            if not bad and not missing:
                break
            reasons.append(f"unknown {bad}, missing {missing} (formals {list(formals)})")
        else:
            problems.append(f"{where}: " + " | ".join(reasons))
    return problems


def test_calls_match_the_specs():
    specs, _ = _packages()
    problems = []
    for i, block in enumerate(blocks()):
        problems += [f"example {i + 1}: {p}" for p in check(block, specs)]
    assert not problems, "\n".join(problems)


def test_every_public_operation_is_shown():
    specs, _ = _packages()
    shown = {(p, s) for block in blocks() for p, s, _, _ in calls(block)}
    declared = {(p, s.name) for p in PACKAGES for s in specs[p].subprograms}
    assert declared - shown == set()


@pytest.mark.parametrize("bad,msg", [
    ("BEGIN l := oramem_store.get_json(in_store_id => 'A', in_record_type => 'memory'); END;", "missing ['IN_RECORD_ID']"),
    ("BEGIN l := oramem_store.get_json(in_store_id => 'A', in_type => 'm', in_record_id => 'x'); END;", "unknown ['IN_TYPE']"),
    ("BEGIN oramem_store.get_json(in_store_id => 'A', in_record_type => 'm', in_record_id => 'x'); END;",
     "used as a procedure"),
    ("BEGIN l := oramem_store.sync_search_index(in_store_id => 'A'); END;", "used as a function"),
    ("BEGIN oramem_store.no_such(in_store_id => 'A'); END;", "no such subprogram"),
    ("BEGIN l := oramem_search.keyword_query('x'); END;", "named notation"),
])
def test_the_checker_catches(bad, msg):
    specs, _ = _packages()
    problems = check(bad, specs)
    assert any(msg in p for p in problems), problems
