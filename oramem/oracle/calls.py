"""The one table of every PL/SQL call the Python driver makes.

The driver (:mod:`oramem.oracle.driver`) and the DBA tooling never write a package call
themselves: they take a :class:`PlsqlCall` from here and call it with named parameters
(``callfunc``/``callproc`` with ``keyword_parameters``). The static gate in
``tests/plsql/`` checks this table against the parsed package specs of ``plsql/``: the
package and subprogram exist, a function is called as a function and a procedure as a
procedure, every parameter name and PL/SQL type matches a formal parameter, every formal
without a default is passed, and the return type is the declared one.

Formal names follow the project's Trivadis conventions (``in_``/``out_``/``io_``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Optional

__all__ = ["PlsqlCall", "check_calls_against"]


@dataclass(frozen=True)
class PlsqlCall:
    """One package subprogram as the driver calls it.

    ``params`` lists ``(formal name, PL/SQL type)`` pairs, both as declared in the spec
    (names are compared case-insensitively). ``returns`` is the function's declared
    return type, or None for a procedure."""

    package: str
    name: str
    params: tuple[tuple[str, str], ...]
    returns: Optional[str] = None

    @property
    def qualified_name(self) -> str:
        return f"{self.package}.{self.name}"

    @property
    def is_function(self) -> bool:
        return self.returns is not None

    @property
    def param_names(self) -> tuple[str, ...]:
        return tuple(p for p, _ in self.params)

    def param_type(self, name: str) -> str:
        for p, t in self.params:
            if p == name:
                return t
        raise KeyError(name)

    def bind(self, **values: Any) -> dict[str, Any]:
        """Keyword parameters for this call; every declared parameter must be given,
        no other name is allowed (so a typo fails before any round trip)."""
        given, declared = set(values), set(self.param_names)
        if given != declared:
            missing = sorted(declared - given)
            extra = sorted(given - declared)
            raise TypeError(
                f"{self.qualified_name}: missing parameters {missing}, unknown parameters {extra}; "
                f"it takes {list(self.param_names)}"
            )
        return {name: values[name] for name in self.param_names}


def check_calls_against(calls: Iterable[PlsqlCall], packages: Mapping[str, Any]) -> list[str]:
    """Problems between ``calls`` and parsed package specs (``{PACKAGE_NAME: PackageUnit}``,
    upper-case names, from the static gate's ``tests/plsql/plsql_parse.py``). Empty when all agree."""
    problems: list[str] = []
    for call in calls:
        pkg = packages.get(call.package.upper())
        if pkg is None:
            problems.append(f"{call.qualified_name}: no package spec {call.package.upper()} in plsql/")
            continue
        subs = [s for s in pkg.find(call.name) if s.kind == ("FUNCTION" if call.is_function else "PROCEDURE")]
        if not subs:
            others = [s.kind for s in pkg.find(call.name)]
            what = f"it is declared as {' and '.join(others)}" if others else "no such subprogram in the spec"
            problems.append(
                f"{call.qualified_name}: called as a {'function' if call.is_function else 'procedure'}, {what}"
            )
            continue
        reasons: list[str] = []
        for sub in subs:  # any overload that fits is fine
            r = _fit(call, sub)
            if not r:
                break
            reasons.append(f"spec line {sub.line}: {r}")
        else:
            problems.append(f"{call.qualified_name}: " + " | ".join(reasons))
    return problems


def _fit(call: PlsqlCall, sub: Any) -> str:
    formals = {p.name: p for p in sub.params}
    out: list[str] = []
    for name, typ in call.params:
        p = formals.get(name.upper())
        if p is None:
            out.append(f"no parameter {name.upper()} (formals: {', '.join(formals) or 'none'})")
            continue
        if p.type != typ.upper():
            out.append(f"parameter {p.name} is {p.type}, the driver binds {typ.upper()}")
        if p.mode != "IN":
            out.append(f"parameter {p.name} is {p.mode}; the driver only passes IN parameters")
    passed = {n.upper() for n, _ in call.params}
    for p in sub.params:
        if p.name not in passed and p.default is None:
            out.append(f"required parameter {p.name} is not passed")
    if call.is_function and (sub.returns or "") != call.returns.upper():  # type: ignore[union-attr]
        out.append(f"returns {sub.returns}, the driver expects {call.returns.upper()}")  # type: ignore[union-attr]
    return "; ".join(out)


#: oramem_kg_jobs (KNOWLEDGE_CONTRACT KC-6.8): the scheduler job of the deterministic
#: knowledge jobs, called by ``oramem kg install-scheduler``; run_deterministic is the
#: job's action (and callable from PL/SQL). Checked against the spec by
#: tests/knowledge/test_kc6_8_scheduling.py.
KG_JOB_CALLS: dict[str, PlsqlCall] = {
    "run_deterministic": PlsqlCall("oramem_kg_jobs", "run_deterministic",
                                   (("in_store_id", "VARCHAR2"), ("in_agent_id", "VARCHAR2"))),
    "install_scheduler": PlsqlCall("oramem_kg_jobs", "install_scheduler",
                                   (("in_store_id", "VARCHAR2"), ("in_every_hours", "PLS_INTEGER"))),
    "drop_scheduler": PlsqlCall("oramem_kg_jobs", "drop_scheduler", (("in_store_id", "VARCHAR2"),)),
}


#: oramem reembed on Oracle (oramem.oracle.reembed; plsql/oramem_admin.pks, "Re-embedding").
#: Part of the driver's ALL_CALLS, so the static gate checks them against the specs.
REEMBED_CALLS: dict[str, PlsqlCall] = {
    "begin": PlsqlCall("oramem_admin", "reembed_begin_json",
                       (("in_store_id", "VARCHAR2"), ("in_target", "CLOB"), ("in_vector_dim", "PLS_INTEGER"),
                        ("in_restart", "PLS_INTEGER")), "CLOB"),
    "lock": PlsqlCall("oramem_store", "lock_retrieval_rows", (("in_store_id", "VARCHAR2"),)),
    "rows": PlsqlCall("oramem_admin", "reembed_rows_json",
                      (("in_store_id", "VARCHAR2"), ("in_after", "CLOB"), ("in_limit", "PLS_INTEGER")), "CLOB"),
    "save": PlsqlCall("oramem_admin", "reembed_save_json",
                      (("in_store_id", "VARCHAR2"), ("in_target", "CLOB"), ("in_rows", "CLOB")), "PLS_INTEGER"),
    "swap": PlsqlCall("oramem_admin", "reembed_swap_json", (("in_store_id", "VARCHAR2"), ("in_target", "CLOB")), "CLOB"),
    "finish": PlsqlCall("oramem_admin", "reembed_finish_json",
                        (("in_store_id", "VARCHAR2"), ("in_target", "CLOB")), "CLOB"),
}
