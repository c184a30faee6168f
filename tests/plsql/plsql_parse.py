"""The structural PL/SQL checker of the static gate (a test tool, not shipped in the wheel).

:func:`check_structure` and :func:`package_signatures` — a structural check of a PL/SQL unit
(balanced ``BEGIN/END``, ``IF/END IF``, ``LOOP/END LOOP``, ``CASE/END [CASE]``, ``$IF/$END``,
parentheses, and ``END name`` labels that match the unit, subprogram or ``<<label>>`` they
close) and the subprogram signatures of a package spec or body. The lexer and the SQL*Plus
script splitter it builds on are the runtime ones, :mod:`oramem.oracle.scripts` (re-exported
here for the tests).

It is not a grammar: a clean structural check is necessary, not sufficient. The full parse in
the gate is done by ParseOra (test extra); this module adds what that parser does not check
(END labels, spec/body agreement).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterator, Optional

from oramem.oracle.scripts import PlsqlSyntaxError, ScriptItem, Token, significant, split_script, tokenize

__all__ = [
    "Token",
    "ScriptItem",
    "Param",
    "Subprogram",
    "PackageUnit",
    "PlsqlSyntaxError",
    "tokenize",
    "significant",
    "split_script",
    "check_structure",
    "package_signatures",
    "parse_packages",
    "compare_spec_body",
]

# --------------------------------------------------------------------------------------
# Structure and signatures
# --------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Param:
    name: str  # upper case
    mode: str  # IN | OUT | IN OUT
    type: str  # normalised upper-case type text ("VARCHAR2", "T.C%TYPE", ...)
    default: Optional[str]  # normalised default expression, None when absent
    nocopy: bool = False


@dataclass(frozen=True)
class Subprogram:
    kind: str  # PROCEDURE | FUNCTION
    name: str  # upper case
    params: tuple[Param, ...]
    returns: Optional[str]  # normalised return type for functions
    line: int

    def signature(self) -> str:
        ps = ", ".join(
            f"{p.name} {p.mode}{' NOCOPY' if p.nocopy else ''} {p.type}"
            + (f" DEFAULT {p.default}" if p.default is not None else "")
            for p in self.params
        )
        ret = f" RETURN {self.returns}" if self.returns else ""
        return f"{self.kind} {self.name}({ps}){ret}"

    @property
    def param_names(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.params)


@dataclass
class PackageUnit:
    """One ``CREATE PACKAGE`` (``body=False``) or ``CREATE PACKAGE BODY`` unit."""

    name: str
    body: bool
    subprograms: list[Subprogram] = field(default_factory=list)
    line: int = 1

    def find(self, name: str) -> list[Subprogram]:
        return [s for s in self.subprograms if s.name == name.upper()]


_HEADER_END = {"IS", "AS"}
_SUB_MODIFIERS = {"PIPELINED", "DETERMINISTIC", "RESULT_CACHE", "PARALLEL_ENABLE", "AGGREGATE", "SQL_MACRO"}


def _norm(tokens: list[Token]) -> str:
    """Normalised text of a token run: names upper-cased, strings kept, single spaces,
    no spaces around ``.``, ``%``, ``(``, ``)``, ``,``."""
    out = ""
    for t in tokens:
        piece = t.upper if t.kind in ("name", "cc") else t.text
        if t.kind == "qname":
            piece = '"' + t.upper + '"'
        if out and not (out[-1] in ".%(" or piece in (".", "%", ")", ",", "(")):
            out += " "
        out += piece
    return out


class _Walker:
    """Structural walk of the significant tokens of one PL/SQL unit."""

    def __init__(self, toks: list[Token]) -> None:
        self.toks = toks
        self.errors: list[PlsqlSyntaxError] = []
        self.packages: list[PackageUnit] = []

    def err(self, msg: str, line: int) -> None:
        self.errors.append(PlsqlSyntaxError(msg, line))

    def run(self) -> None:
        toks = self.toks
        # stack frames: (kind, name, line); kinds: UNIT, SUB, BEGIN, IF, LOOP, CASE, PAREN, CC
        stack: list[tuple[str, Optional[str], int]] = []
        pending_label: Optional[str] = None
        unit_pkg: Optional[PackageUnit] = None
        i, n = 0, len(toks)
        # unit header
        head = [t.upper for t in toks[:8]]
        if head[:1] == ["CREATE"]:
            j = 1
            if head[j : j + 2] == ["OR", "REPLACE"]:
                j += 2
            if j < len(head) and head[j] in ("EDITIONABLE", "NONEDITIONABLE"):
                j += 1
            what = head[j] if j < len(head) else ""
            if what in ("PACKAGE", "TYPE") and j + 1 < len(head) and head[j + 1] == "BODY":
                j += 2
                is_body = True
            else:
                j += 1
                is_body = False
            name_idx = j
            # schema-qualified name
            name = toks[name_idx].upper if name_idx < n else ""
            if name_idx + 2 < n and toks[name_idx + 1].text == ".":
                name_idx += 2
                name = toks[name_idx].upper
            if what == "PACKAGE":
                unit_pkg = PackageUnit(name, is_body, line=toks[0].line)
                self.packages.append(unit_pkg)
                k = self._find_header_is(name_idx + 1)
                if k is None:
                    self.err(f"package {name}: no IS/AS after the header", toks[0].line)
                    return
                stack.append(("UNIT", name, toks[0].line))
                i = k + 1
            elif what == "TYPE" and is_body:
                k = self._find_header_is(name_idx + 1)
                if k is None:
                    self.err(f"type body {name}: no IS/AS after the header", toks[0].line)
                    return
                stack.append(("UNIT", name, toks[0].line))
                i = k + 1
            elif what == "TYPE":
                i = name_idx + 1  # object/collection spec: no END
            elif what in ("PROCEDURE", "FUNCTION"):
                i = 1  # handled by the generic subprogram rule below
                while toks[i].upper != what:
                    i += 1
            else:
                i = name_idx + 1
        while i < n:
            t = toks[i]
            u = t.upper if t.kind in ("name", "cc") else t.text
            if t.kind == "op" and t.text == "(":
                stack.append(("PAREN", None, t.line))
            elif t.kind == "op" and t.text == ")":
                if not stack or stack[-1][0] != "PAREN":
                    self.err("unbalanced ')'", t.line)
                    return
                stack.pop()
            elif any(f[0] == "PAREN" for f in stack[-1:]):
                # inside parentheses only CASE/END matter (CASE expressions)
                if t.kind == "name" and u == "CASE":
                    stack.append(("CASE", None, t.line))
                elif t.kind == "name" and u == "END" and stack[-1][0] == "CASE":
                    stack.pop()
                i += 1
                continue
            elif t.kind == "op" and t.text == "<<" and i + 2 < n and toks[i + 2].text == ">>":
                pending_label = toks[i + 1].upper
                i += 3
                continue
            elif t.kind == "cc":
                if u == "$IF":
                    stack.append(("CC", None, t.line))
                elif u in ("$ERROR",):
                    # $ERROR ... $END: skip to its $END
                    j = i + 1
                    while j < n and toks[j].upper != "$END":
                        j += 1
                    i = j + 1
                    continue
                elif u == "$END":
                    if not stack or stack[-1][0] != "CC":
                        self.err("$END without $IF", t.line)
                        return
                    stack.pop()
            elif t.kind == "name":
                prev = toks[i - 1].upper if i > 0 else ""
                if u in ("PROCEDURE", "FUNCTION") and prev not in ("DROP", "EXECUTE") and not (
                    i + 1 < n and toks[i + 1].text in ("(", ",", ")", ";", ".")
                ):
                    sub, k, has_body = self._subprogram(i)
                    at_package_level = bool(stack) and stack[0][0] == "UNIT" and all(f[0] == "CC" for f in stack[1:])
                    if sub is not None and unit_pkg is not None and at_package_level:
                        unit_pkg.subprograms.append(sub)
                    if has_body:
                        stack.append(("SUB", sub.name if sub else None, t.line))
                    i = k + 1
                    pending_label = None
                    continue
                if u == "BEGIN":
                    stack.append(("BEGIN", pending_label, t.line))
                    pending_label = None
                elif u in ("IF", "LOOP", "CASE") and prev != "END":
                    if u == "IF" and (
                        (i + 1 < n and toks[i + 1].upper == "EXISTS")
                        or (i + 2 < n and toks[i + 1].upper == "NOT" and toks[i + 2].upper == "EXISTS")
                    ):
                        pass  # DDL "IF [NOT] EXISTS" inside a unit header is not a block
                    else:
                        stack.append((u, pending_label if u == "LOOP" else None, t.line))
                    pending_label = None
                elif u == "END":
                    nxt = toks[i + 1] if i + 1 < n else None
                    nu = nxt.upper if nxt is not None and nxt.kind == "name" else None
                    if nu in ("IF", "LOOP", "CASE") and (not stack or stack[-1][0] != "CASE" or nu == "CASE"):
                        if not stack or stack[-1][0] != nu:
                            top = stack[-1][0] if stack else "nothing"
                            self.err(f"END {nu} closes {top}", nxt.line)
                            return
                        frame = stack.pop()
                        i += 2
                        if nu == "LOOP" and i < n and toks[i].kind in ("name", "qname") and toks[i].upper not in ("IF",):
                            if frame[1] is None or toks[i].upper != frame[1]:
                                self.err(f"END LOOP {toks[i].upper} does not match the loop label {frame[1]}", toks[i].line)
                            i += 1
                        continue
                    if not stack:
                        self.err("END without a matching block", t.line)
                        return
                    top = stack[-1]
                    if top[0] == "CASE":  # CASE expression ... END
                        stack.pop()
                        i += 1
                        continue
                    if top[0] == "BEGIN":
                        stack.pop()
                        label = nu if nxt is not None and nxt.kind in ("name", "qname") else None
                        if nxt is not None and nxt.kind == "qname":
                            label = nxt.upper
                        closes = [top]
                        if stack and stack[-1][0] in ("SUB", "UNIT") and top[1] is None:
                            closes.append(stack.pop())
                        owner = closes[-1]
                        if label is not None:
                            expect = owner[1]
                            if expect is None or label != expect:
                                self.err(f"END {label} does not match {owner[0].lower()} {expect}", nxt.line)
                            i += 2
                        else:
                            i += 1
                        continue
                    if top[0] == "UNIT":
                        stack.pop()
                        if nxt is not None and nxt.kind in ("name", "qname"):
                            if nxt.upper != top[1]:
                                self.err(f"END {nxt.upper} does not match unit {top[1]}", nxt.line)
                            i += 2
                        else:
                            i += 1
                        continue
                    self.err(f"END closes {top[0]} opened on line {top[2]}", t.line)
                    return
            i += 1
        for frame in reversed(stack):
            what = {"PAREN": "'('", "CC": "$IF"}.get(frame[0], frame[0] + (f" {frame[1]}" if frame[1] else ""))
            self.err(f"{what} opened here is never closed", frame[2])
            return

    def _find_header_is(self, i: int) -> Optional[int]:
        depth = 0
        while i < len(self.toks):
            t = self.toks[i]
            if t.text == "(":
                depth += 1
            elif t.text == ")":
                depth -= 1
            elif depth == 0 and t.kind == "name" and t.upper in _HEADER_END:
                return i
            elif depth == 0 and t.text == ";":
                return None
            i += 1
        return None

    def _subprogram(self, i: int) -> tuple[Optional[Subprogram], int, bool]:
        """Parse the header at ``toks[i]`` (PROCEDURE/FUNCTION). Returns the subprogram,
        the index of the ``;`` or ``IS``/``AS`` that ends the header, and whether a body
        follows."""
        toks = self.toks
        kind = toks[i].upper
        line = toks[i].line
        if i + 1 >= len(toks):
            self.err(f"{kind} without a name", line)
            return None, len(toks) - 1, False
        name = toks[i + 1].upper
        j = i + 2
        params: list[Param] = []
        if j < len(toks) and toks[j].text == "(":
            depth, k, start = 0, j, j + 1
            groups: list[list[Token]] = []
            while k < len(toks):
                tx = toks[k].text
                if tx == "(":
                    depth += 1
                elif tx == ")":
                    depth -= 1
                    if depth == 0:
                        groups.append(toks[start:k])
                        break
                elif tx == "," and depth == 1:
                    groups.append(toks[start:k])
                    start = k + 1
                k += 1
            else:
                self.err(f"{kind} {name}: unclosed parameter list", line)
                return None, len(toks) - 1, False
            for g in groups:
                p = self._param(g, kind, name, line)
                if p is not None:
                    params.append(p)
            j = k + 1
        returns = None
        depth = 0
        ret_toks: list[Token] = []
        in_ret = False
        while j < len(toks):
            t = toks[j]
            u = t.upper if t.kind == "name" else t.text
            if t.text == "(":
                depth += 1
            elif t.text == ")":
                if depth == 0:  # end of an enclosing list (object type spec)
                    break
                depth -= 1
            if depth == 0 and (u in _HEADER_END or u in (";", ",")):
                break
            if depth == 0 and u == "RETURN" and not in_ret:
                in_ret = True
            elif depth == 0 and in_ret and (u in _SUB_MODIFIERS or u in ("ACCESSIBLE", "AUTHID")):
                in_ret = False
            elif in_ret:
                ret_toks.append(t)
            j += 1
        if kind == "FUNCTION":
            if not ret_toks:
                self.err(f"FUNCTION {name} has no RETURN type", line)
            returns = _norm(ret_toks)
        end_tok = toks[j] if j < len(toks) else None
        has_body = end_tok is not None and end_tok.kind == "name" and end_tok.upper in _HEADER_END
        if has_body and j + 1 < len(toks) and toks[j + 1].upper in ("LANGUAGE", "EXTERNAL"):
            has_body = False
        return Subprogram(kind, name, tuple(params), returns, line), j, has_body

    def _param(self, g: list[Token], kind: str, sub: str, line: int) -> Optional[Param]:
        if not g:
            self.err(f"{kind} {sub}: empty parameter", line)
            return None
        pname = g[0].upper
        k = 1
        mode = "IN"
        if k < len(g) and g[k].upper == "IN":
            k += 1
            if k < len(g) and g[k].upper == "OUT":
                mode = "IN OUT"
                k += 1
        elif k < len(g) and g[k].upper == "OUT":
            mode = "OUT"
            k += 1
        nocopy = False
        if k < len(g) and g[k].upper == "NOCOPY":
            nocopy = True
            k += 1
        rest = g[k:]
        default = None
        for d, t in enumerate(rest):
            if t.text == ":=" or (t.kind == "name" and t.upper == "DEFAULT"):
                default = _norm(rest[d + 1 :])
                rest = rest[:d]
                break
        if not rest:
            self.err(f"{kind} {sub}: parameter {pname} has no type", g[0].line)
        return Param(pname, mode, _norm(rest), default, nocopy)


def check_structure(unit_text: str, first_line: int = 1) -> list[PlsqlSyntaxError]:
    """Structural problems of one PL/SQL unit (empty list when none were found)."""
    try:
        toks = significant(tokenize(unit_text, first_line))
    except PlsqlSyntaxError as e:
        return [e]
    w = _Walker(toks)
    w.run()
    return w.errors


def package_signatures(unit_text: str, first_line: int = 1) -> Optional[PackageUnit]:
    """The package-level subprograms of one ``CREATE PACKAGE [BODY]`` unit (None when the
    unit is not a package). Raises :class:`PlsqlSyntaxError` on a structural problem."""
    toks = significant(tokenize(unit_text, first_line))
    w = _Walker(toks)
    w.run()
    if w.errors:
        raise w.errors[0]
    return w.packages[0] if w.packages else None


def parse_packages(script_text: str) -> Iterator[PackageUnit]:
    """Every package spec/body in a script."""
    for item in split_script(script_text):
        if item.kind == "plsql":
            pkg = package_signatures(item.text, item.line)
            if pkg is not None:
                yield pkg


def compare_spec_body(spec: PackageUnit, body: PackageUnit) -> list[str]:
    """Disagreements between a package spec and its body: every spec subprogram must be
    implemented in the body with identical parameter names, modes, NOCOPY, types,
    defaults and return type (overloads are matched by their full signature)."""
    problems: list[str] = []
    if spec.body or not body.body:
        raise ValueError("compare_spec_body(spec, body): pass the spec first, then the body")
    if spec.name != body.name:
        problems.append(f"spec {spec.name} is compared with body {body.name}")
    body_sigs = {s.signature() for s in body.subprograms}
    for sub in spec.subprograms:
        if sub.signature() in body_sigs:
            continue
        candidates = [b for b in body.subprograms if b.name == sub.name and b.kind == sub.kind]
        if not candidates:
            problems.append(f"{spec.name}.{sub.name} (spec line {sub.line}) has no {sub.kind} in the body")
            continue
        detail = "; ".join(_diff_subprograms(sub, b) for b in candidates)
        problems.append(f"{spec.name}.{sub.name} (spec line {sub.line}) differs from the body: {detail}")
    seen: dict[str, int] = {}
    for sub in spec.subprograms:
        sig = sub.signature()
        if sig in seen:
            problems.append(f"{spec.name}.{sub.name} is declared twice in the spec (lines {seen[sig]} and {sub.line})")
        seen[sig] = sub.line
    return problems


def _diff_subprograms(a: Subprogram, b: Subprogram) -> str:
    """What differs between spec ``a`` and body ``b`` (first difference per parameter)."""
    out: list[str] = []
    if len(a.params) != len(b.params):
        out.append(f"spec has {len(a.params)} parameters {list(a.param_names)}, body line {b.line} has "
                   f"{len(b.params)} {list(b.param_names)}")
    for pa, pb in zip(a.params, b.params):
        for attr in ("name", "mode", "nocopy", "type", "default"):
            va, vb = getattr(pa, attr), getattr(pb, attr)
            if va != vb:
                out.append(f"parameter {pa.name}: {attr} {va!r} in the spec, {vb!r} in the body (line {b.line})")
                break
    if a.returns != b.returns:
        out.append(f"RETURN {a.returns} in the spec, RETURN {b.returns} in the body (line {b.line})")
    return ", ".join(out) or f"body line {b.line} differs"
