"""plsql/README.md "Entry points" states each call's signature: it must be the package spec's
(audit24). The runnable examples below it are checked by test_readme_examples.py; this table
was not, and it showed `install_scheduler(in_store_id, in_every_hours)` without the spec's
default (`in_every_hours PLS_INTEGER DEFAULT 4`), which tells a PL/SQL caller the argument is
required. Checked per call: the subprogram exists; the formals shown are the spec's, in order;
a default or type shown is the spec's and every spec default is shown; a procedure's result
column is "-" and a function's is not."""

from __future__ import annotations

import re

from .plsql_gate import REPO
from .test_static_gate import _packages

README = REPO / "plsql" / "README.md"
CALL = re.compile(r"`(oramem_\w+)\.(\w+)(?:\(([^)]*)\))?`|(?<= / )`(\w+)(?:\(([^)]*)\))?`")
FORMAL = re.compile(r"(\w+)(?:\s+(\w+))?(?:\s*(?::=|DEFAULT)\s*(.+))?$", re.I)


def _rows() -> list[tuple[list[tuple[str, str, str | None]], list[str]]]:
    """Per table row: its calls (package, subprogram, argument text or None) and the result
    column split at ' / ' (one part per call when the row lists several)."""
    text = README.read_text(encoding="utf-8")
    section = text[text.index("## Entry points"):text.index("(*) Admin calls")]
    rows = []
    for line in section.splitlines():
        if not line.startswith("| `oramem"):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split(" | ")]
        calls, package = [], None
        for m in CALL.finditer(cells[0]):
            if m.group(1):
                package, name, args = m.group(1), m.group(2), m.group(3)
            else:  # `drop_scheduler(...)` after a ' / ': same package
                name, args = m.group(4), m.group(5)
            calls.append((package.upper(), name.upper(), args))
        rows.append((calls, cells[1].split(" / ")))
    return rows


def _formals(args: str) -> list[tuple[str, str | None, str | None]]:
    out = []
    for piece in (a.strip() for a in args.split(",")):
        if piece:
            m = FORMAL.match(piece)
            assert m, piece
            out.append((m.group(1).upper(), m.group(2), m.group(3)))
    return out


def test_the_entry_point_table_states_the_specs_signatures():
    specs, _ = _packages()
    rows = _rows()
    assert sum(len(calls) for calls, _ in rows) >= 35, "the table scan lost rows"
    problems = []
    for calls, results in rows:
        for i, (package, name, args) in enumerate(calls):
            subs = [s for s in specs[package].subprograms if s.name == name] if package in specs else []
            if not subs:
                problems.append(f"{package}.{name}: not in the spec")
                continue
            sub = subs[0]
            where = f"{package}.{name}"
            if len(results) == len(calls):
                says_procedure = results[i].strip().startswith("-")
                if says_procedure != (sub.kind == "PROCEDURE"):
                    problems.append(f"{where}: the table's result {results[i]!r} but it is a {sub.kind}")
            if args is None or "same" in args:
                continue  # `delete_record(...same...)`: the row above's formals
            shown = _formals(args)
            if [n for n, _, _ in shown] != [p.name for p in sub.params]:
                problems.append(f"{where}: formals {[n for n, _, _ in shown]} vs the spec's {[p.name for p in sub.params]}")
                continue
            for (formal, typ, default), param in zip(shown, sub.params):
                if typ and typ.upper() != param.type.upper():
                    problems.append(f"{where}.{formal}: type {typ} vs the spec's {param.type}")
                if (default or None) is None and param.default is not None:
                    problems.append(f"{where}.{formal}: the spec's default {param.default} is not shown (reads as required)")
                elif default is not None and default.strip().upper() != (param.default or "").upper():
                    problems.append(f"{where}.{formal}: default {default} vs the spec's {param.default}")
    assert not problems, "\n".join(problems)


def test_the_search_specs_header_names_the_default_fusion():
    """oramem_search.pks's header said HYBRID is "score fusion by default" (and its summary
    "relative score fusion - or, on request, weighted reciprocal-rank fusion"); the default
    is gc_fusion, 'gated-rrf' since issue 23 item 2 (docs/oracle-search.md)."""
    text = (REPO / "plsql" / "oramem_search.pks").read_text(encoding="utf-8")
    default = re.search(r"gc_fusion\s+CONSTANT VARCHAR2\(\d+ CHAR\)\s*:=\s*'([\w-]+)'", text)
    assert default, "gc_fusion is gone"
    header = text[: text.index("*/")]
    said = re.findall(r"\(([\w -]+?) by default", " ".join(header.split()))
    assert said, "the header no longer says which fusion is the default"
    names = {"gated-rrf": "gated-rrf", "gated reciprocal-rank fusion": "gated-rrf", "score": "score",
             "score fusion": "score", "relative score fusion": "score", "rrf": "rrf"}
    assert {names.get(s.strip().lstrip("* ").strip(), s) for s in said} == {default.group(1)}, said
    assert "gated reciprocal-rank fusion" in " ".join(header.replace("*", " ").split())


def test_the_terminator_convention_names_what_install_and_uninstall_hold():
    """plsql/README.md said install.sql / uninstall.sql "use only @@file lines, PROMPT,
    WHENEVER SQLERROR EXIT FAILURE and SET DEFINE OFF"; both hold anonymous PL/SQL blocks
    (install's compile check, every step of uninstall) and uninstall.sql includes no file."""
    from oramem.oracle.scripts import split_script

    text = README.read_text(encoding="utf-8")
    section = " ".join(text[text.index("### Script terminator convention"):text.index("## Entry points")].split())
    for name in ("install.sql", "uninstall.sql"):
        items = split_script((REPO / "plsql" / name).read_text(encoding="utf-8"))
        kinds = {"block" if i.kind == "plsql" else i.text.split()[0].upper()[:2] if i.text.startswith("@@")
                 else i.text.split()[0].upper() for i in items}
        assert kinds <= {"block", "@@", "PROMPT", "SET", "WHENEVER"}, (name, kinds)
        if "block" in kinds:
            assert f"`{name}`'s" in section and "blocks" in section, f"{name} holds PL/SQL blocks; the convention does not say so"
        if "@@" not in kinds:
            assert f"`{name}` has none" in section, f"{name} includes no file; the convention says it uses @@file lines"
