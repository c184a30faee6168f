"""DBA tooling: install, upgrade, uninstall, status and doctor for oramem in one schema.

Everything here takes a **sync** python-oracledb connection to the schema that owns (or
will own) oramem, and is what ``oramem db …`` (:mod:`oramem.cli.cmd_db`) runs.

Scripts. ``plsql/install.sql`` / ``plsql/uninstall.sql`` are SQL*Plus scripts; they are run
statement by statement here (:func:`oramem.oracle.scripts.split_script`), following
``@@file`` includes relative to the including file, echoing ``PROMPT`` lines, ignoring
``SET``/``WHENEVER`` (execution always stops at the first error), and turning ``EXEC x``
into ``BEGIN x; END;``. After every PL/SQL unit, ``USER_ERRORS`` is read and compilation
errors stop the run with the error lines.

Where the scripts come from (:func:`scripts_root`), first match wins:
1. ``scripts_dir=`` / ``--scripts-dir``; 2. the ``ORAMEM_SQL_DIR`` environment variable;
3. the source checkout this module lives in (``<repo>/plsql/install.sql``);
4. package data ``oramem/oracle/sql/plsql/install.sql`` (a wheel build step must copy
   ``ddl/`` and ``plsql/`` there; the repository's packaging config owns that step).

Static-checked, not run against Oracle here.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Optional

import oracledb

from ..errors import Error
from .calls import PlsqlCall
from .errors import translate
from .scripts import split_script

__all__ = [
    "ADMIN_CALLS",
    "Check",
    "ScriptError",
    "scripts_root",
    "run_script",
    "install",
    "upgrade",
    "uninstall",
    "status",
    "doctor",
    "MIN_VERSION",
]

#: The oldest database release oramem supports (VECTOR, HNSW, DB_DEVELOPER_ROLE).
MIN_VERSION = (23, 4)

_C, _V, _I = "CLOB", "VARCHAR2", "PLS_INTEGER"
ADMIN_CALLS: dict[str, PlsqlCall] = {
    "list_stores": PlsqlCall("oramem_admin", "list_stores", (), _C),
    "erasure_log": PlsqlCall("oramem_admin", "get_erasure_log_json", (("in_store_id", _V),), _C),
    "capabilities": PlsqlCall("oramem_admin", "capabilities", (), _C),
    "upgrade_store": PlsqlCall("oramem_admin", "upgrade_store", (("in_store_id", _V),), _C),
    "drop_store": PlsqlCall("oramem_admin", "drop_store", (("in_store_id", _V), ("in_if_exists", _I))),
    "export": PlsqlCall("oramem_store", "export_json",
                        (("in_store_id", _V), ("in_after_seq", "NUMBER"), ("in_limit", _I)), _C),
}

#: oramem's package names (for status: installed and VALID?).
PACKAGES = (
    "ORAMEM_ERRORS", "ORAMEM_REGISTRY", "ORAMEM_FILTER", "ORAMEM_ADMIN", "ORAMEM_STORE", "ORAMEM_SEARCH",
    "ORAMEM_KG_JOBS",
)


class ScriptError(Error, RuntimeError):
    """A script statement failed; says which file and line."""


def scripts_root(scripts_dir: Optional[str | os.PathLike[str]] = None) -> Path:
    """The directory holding ``plsql/install.sql`` and ``ddl/`` (see module docstring)."""
    candidates: list[Path] = []
    if scripts_dir is not None:
        candidates.append(Path(scripts_dir))
    elif os.environ.get("ORAMEM_SQL_DIR"):
        candidates.append(Path(os.environ["ORAMEM_SQL_DIR"]))
    else:
        candidates.append(Path(__file__).resolve().parents[2])
        candidates.append(Path(__file__).resolve().parent / "sql")
    for c in candidates:
        if (c / "plsql" / "install.sql").is_file():
            return c.resolve()
    raise FileNotFoundError(
        "oramem's SQL scripts (plsql/install.sql, ddl/) were not found in "
        + ", ".join(str(c) for c in candidates)
        + ": run from a source checkout, set ORAMEM_SQL_DIR to the directory holding plsql/ and ddl/, "
        "or pass --scripts-dir"
    )


_CREATE_UNIT = re.compile(
    r"^\s*CREATE\s+(?:OR\s+REPLACE\s+)?(?:(?:NON)?EDITIONABLE\s+)?"
    r"(PACKAGE\s+BODY|PACKAGE|PROCEDURE|FUNCTION|TRIGGER|TYPE\s+BODY|TYPE)\s+"
    r"(?:\"?[A-Za-z][\w$#]*\"?\s*\.\s*)?\"?([A-Za-z][\w$#]*)\"?",
    re.IGNORECASE,
)


def _compile_errors(cur: Any, unit_text: str) -> list[str]:
    m = _CREATE_UNIT.match(unit_text)
    if not m:
        return []
    otype = re.sub(r"\s+", " ", m.group(1).upper())
    name = m.group(2).upper()
    cur.execute(
        "select line, position, text from user_errors where name = :name and type = :type "
        "and attribute = 'ERROR' order by sequence",
        name=name,
        type=otype,
    )
    return [f"{otype} {name} line {ln}:{pos}: {txt.strip()}" for ln, pos, txt in cur.fetchall()]


def run_script(
    conn: Any,
    path: Path,
    root: Path,
    echo: Callable[[str], None] = lambda s: None,
    _seen: Optional[set[Any]] = None,
) -> int:
    """Run one SQL*Plus script (and its ``@@`` includes) statement by statement.
    Returns the number of statements executed. Stops at the first error."""
    path = path.resolve()
    if not path.is_relative_to(root):
        raise ScriptError(f"{path}: refusing to run a script outside {root}")
    seen = _seen if _seen is not None else set()
    if path in seen:
        raise ScriptError(f"{path}: included twice (include cycle?)")
    seen.add(path)
    count = 0
    rel = path.relative_to(root)
    for item in split_script(path.read_text(encoding="utf-8")):
        if item.kind == "sqlplus":
            cmd = item.command
            if cmd in ("@@", "@"):
                target = item.text.lstrip("@").strip().split()[0]
                inc = (path.parent / target)
                if not inc.suffix:
                    inc = inc.with_suffix(".sql")
                count += run_script(conn, inc, root, echo, seen)
            elif cmd in ("PROMPT", "PRO"):
                echo(item.text.split(None, 1)[1] if " " in item.text else "")
            elif cmd in ("EXEC", "EXECUTE"):
                body = item.text.split(None, 1)[1].rstrip().rstrip(";")
                count += _execute(conn, f"BEGIN {body}; END;", rel, item.line, plsql=True)
            elif cmd in ("SET", "WHENEVER", "REM", "REMARK", "SHOW", "SHO", "SPOOL", "EXIT", "QUIT",
                         "COLUMN", "COL", "TIMING", "CLEAR", "BREAK", "TTITLE", "BTITLE", "PAUSE"):
                continue
            else:
                raise ScriptError(f"{rel} line {item.line}: SQL*Plus command {cmd} is not supported by the installer")
            continue
        count += _execute(conn, item.text, rel, item.line, plsql=item.kind == "plsql")
    return count


#: what to do when a script statement fails for want of a grant or quota (dba33 F11): the
#: statements before it are committed DDL, and the scripts are idempotent, so the fix is the
#: grant and a rerun
_RERUN = "then run the same command again: the scripts are idempotent and skip what is there"
_SCRIPT_HINTS: dict[int, str] = {
    1031: "a privilege is missing: `oramem db doctor` names the grant and its GRANT statement; " + _RERUN,
    1950: "no quota on the tablespace: as a DBA, ALTER USER <user> QUOTA UNLIMITED ON <tablespace>; " + _RERUN,
    1536: "the tablespace quota is used up: as a DBA, ALTER USER <user> QUOTA UNLIMITED ON <tablespace>; " + _RERUN,
}


def _execute(conn: Any, text: str, rel: Path, line: int, plsql: bool) -> int:
    with conn.cursor() as cur:
        try:
            cur.execute(text)
        except oracledb.DatabaseError as e:
            msg = getattr(e.args[0], "message", None) if e.args else None
            first = (msg if isinstance(msg, str) else str(e)).splitlines()[0]
            code = getattr(e.args[0], "code", None) if e.args else None
            hint = _SCRIPT_HINTS.get(code) if isinstance(code, int) else None
            raise ScriptError(f"{rel} line {line}: {first}" + (f" ({hint})" if hint else "")) from e
        if plsql:
            errors = _compile_errors(cur, text)
            if errors:
                raise ScriptError(f"{rel} line {line}: compilation errors:\n  " + "\n  ".join(errors))
    return 1


def _call(conn: Any, call: PlsqlCall, **values: Any) -> Any:
    binds = call.bind(**values)
    with conn.cursor() as cur:
        try:
            if call.is_function:
                rt = {"CLOB": oracledb.DB_TYPE_CLOB, "VARCHAR2": str}.get(call.returns or "", int)
                out = cur.callfunc(call.qualified_name, rt, keyword_parameters=binds)
            else:
                cur.callproc(call.qualified_name, keyword_parameters=binds)
                out = None
        except oracledb.DatabaseError as e:
            mapped = translate(e)
            if mapped is e:
                raise
            raise mapped from e
        if isinstance(out, oracledb.LOB):
            out = out.read()
        return out



def call_plsql(conn: Any, call: PlsqlCall, **values: Any) -> Any:
    """Run one declared PL/SQL call (``ADMIN_CALLS``, ``oramem.oracle.calls``) on ``conn``:
    values bound by name, database errors translated to oramem's classes. The public door for
    the command line (``oramem db``, ``oramem kg``, ``selftest``) into the admin calls."""
    return _call(conn, call, **values)

def _installed(conn: Any) -> dict[str, str]:
    """{object_type object_name: status} of oramem's packages in this schema."""
    with conn.cursor() as cur:
        cur.execute(
            "select object_type, object_name, status from user_objects "
            "where object_type in ('PACKAGE', 'PACKAGE BODY') and object_name like 'ORAMEM\\_%' escape '\\'"
        )
        return {f"{t} {n}": s for t, n, s in cur.fetchall()}


def list_stores(conn: Any) -> list[dict[str, Any]]:
    result: list[dict[str, Any]] = json.loads(_call(conn, ADMIN_CALLS["list_stores"]) or "[]")
    return result


def erasure_log(conn: Any, store_id: str) -> list[dict[str, Any]]:
    """``oramem_admin.get_erasure_log_json``: a store's erasure receipts (SC-14.3; what
    ``oramem migrate`` carries and checks). A schema installed before the erasure log
    (catalog version 3 or older: no such function or table) has none. Static-checked, not
    run against Oracle."""
    try:
        return list(json.loads(_call(conn, ADMIN_CALLS["erasure_log"], in_store_id=store_id) or "[]"))
    except Exception as exc:  # python-oracledb's DatabaseError; the driver is imported lazily
        if any(code in str(exc) for code in ("PLS-00302", "ORA-00942", "PLS-00201")):
            return []
        raise


def export_page(conn: Any, store_id: str, after_seq: int, limit: int) -> list[dict[str, Any]]:
    """``oramem_store.export_json``: up to ``limit`` live records of a store with seq_no above
    ``after_seq``, each ``{"record": ..., "chunks": [...] | None}`` (what ``oramem migrate``
    reads from an Oracle source). Static-checked, not run against Oracle."""
    page: list[dict[str, Any]] = json.loads(
        _call(conn, ADMIN_CALLS["export"], in_store_id=store_id, in_after_seq=after_seq, in_limit=limit) or "[]")
    return page


_CODE_VERSION = re.compile(r"\b(gc_catalog_version|gc_store_schema_version)\s+CONSTANT\s+PLS_INTEGER\s*:=\s*(\d+)\s*;",
                           re.IGNORECASE)


def code_versions(root: Path) -> dict[str, int]:
    """The catalog and per-store schema versions the scripts under ``root`` install
    (``oramem_registry.gc_catalog_version`` / ``gc_store_schema_version``)."""
    text = (root / "plsql" / "oramem_registry.pks").read_text(encoding="utf-8")
    found = {m.group(1).lower(): int(m.group(2)) for m in _CODE_VERSION.finditer(text)}
    if set(found) != {"gc_catalog_version", "gc_store_schema_version"}:
        raise ScriptError(f"{root / 'plsql' / 'oramem_registry.pks'}: gc_catalog_version / gc_store_schema_version "
                          "not found; these are not oramem's scripts")
    return found


def _dictionary_rows(conn: Any, sql: str, **binds: Any) -> list[Any]:
    """Rows of a query on oramem's catalog; none when the table does not exist yet (ORA-00942:
    a schema oramem was never installed in). Any other error is raised."""
    with conn.cursor() as cur:
        try:
            cur.execute(sql, **binds)
        except oracledb.DatabaseError as e:
            code = getattr(e.args[0], "code", None) if e.args else None
            if code == 942:
                return []
            raise
        return list(cur.fetchall() or [])


def check_not_newer(conn: Any, root: Path) -> None:
    """Refuse (before anything is run) to install scripts older than what this schema holds:
    a catalog version above the scripts' (``ORAMEM_SCHEMA_VERSION``) or a store whose
    ``schema_version`` is above theirs. ``CREATE OR REPLACE`` would put the older packages over
    the newer ones, and those refuse every store of a newer schema version (-20107); the
    catalog scripts never lower a version, so nothing would say so (dba33 F4)."""
    code = code_versions(root)
    catalog = _dictionary_rows(conn, "select max(version) from oramem_schema_version where component = 'CATALOG'")
    installed = catalog[0][0] if catalog and catalog[0][0] is not None else None
    newer = _dictionary_rows(conn, "select memory_store_id, schema_version from oramem_stores "
                                   "where schema_version > :v order by memory_store_id",
                             v=code["gc_store_schema_version"])
    problems = []
    if installed is not None and int(installed) > code["gc_catalog_version"]:
        problems.append(f"its catalog is version {int(installed)}, these scripts' is {code['gc_catalog_version']}")
    if newer:
        names = ", ".join(f"{sid} ({int(v)})" for sid, v in newer[:10]) + ("…" if len(newer) > 10 else "")
        problems.append(f"{len(newer)} store(s) have a schema version above these scripts' "
                        f"{code['gc_store_schema_version']}: {names}")
    if problems:
        raise ScriptError(
            "this schema was installed by a newer oramem: " + "; ".join(problems) + f" ({root}). Nothing was run: "
            "the older packages would replace the newer ones and refuse those stores. Install the oramem release "
            "that installed it, or a newer one (pip install -U oramem), then run `oramem db upgrade`")


def install(conn: Any, scripts_dir: Optional[str] = None, echo: Callable[[str], None] = print) -> int:
    """Run ``plsql/install.sql``; returns the number of statements. Refuses scripts older than
    the schema's oramem (:func:`check_not_newer`); fails when any oramem package is left
    INVALID."""
    root = scripts_root(scripts_dir)
    check_not_newer(conn, root)
    n = run_script(conn, root / "plsql" / "install.sql", root, echo)
    invalid = sorted(k for k, s in _installed(conn).items() if s != "VALID")
    if invalid:
        raise ScriptError("installed, but these objects are INVALID: " + ", ".join(invalid)
                          + " (see USER_ERRORS; run `oramem db doctor`)")
    return n


def run_ddl(conn: Any, text: str, label: str) -> int:
    """Run a DDL script given as text (SQL and PL/SQL blocks, split as SQL*Plus would) on
    ``conn``; ``label`` names it in errors. Returns the number of statements. Layers above the
    engine install their own tables with it (``oramem.knowledge.db.install.install_oracle``).
    Static-checked, not run against Oracle."""
    count = 0
    for item in split_script(text):
        if item.kind == "sql" or item.kind == "plsql":
            count += _execute(conn, item.text, Path(label), item.line, plsql=item.kind == "plsql")
    return count


def _not_ready(s: dict[str, Any]) -> Optional[str]:
    """What is wrong with a store ``upgrade`` leaves behind, and what to do; None when it is
    READY at the code's schema version."""
    sid, state = s.get("memory_store_id"), s.get("state")
    have, code = s.get("schema_version"), s.get("code_schema_version")
    if have is not None and code is not None and have > code:
        return f"{sid}: schema version {have}, newer than these packages' {code} (install the newer oramem)"
    if state in (None, "READY"):
        return None
    why = f" (last error: {s['last_error']})" if s.get("last_error") else ""
    if state == "DROPPING":
        todo = f"finish the drop: oramem_admin.drop_store('{sid}'), or open it with RECREATE"
    elif state == "BROKEN":
        todo = (f"fix the cause, then resume with oramem_admin.upgrade_store('{sid}') or an open with "
                "CREATE_IF_NECESSARY")
    else:  # CREATING / UPGRADING: a session may still be at work
        todo = (f"if no session is still working on it (state set at {s.get('updated_at')}), resume with "
                f"oramem_admin.upgrade_store('{sid}') or an open with CREATE_IF_NECESSARY; a reembed that was "
                "swapping in vectors of another dimension is finished by running that reembed again")
    return f"{sid}: {state}{why}: {todo}"


def upgrade(conn: Any, scripts_dir: Optional[str] = None, echo: Callable[[str], None] = print) -> list[str]:
    """Re-run the (idempotent) install, then upgrade every store whose schema_version is
    older than the code's. Returns the ids of the stores upgraded. Raises :class:`ScriptError`
    naming every store left not READY (or newer than the code) and what to do, after the
    others were upgraded: "stores upgraded: none needed" said nothing of them (dba33 F5)."""
    install(conn, scripts_dir, echo)
    done: list[str] = []
    failed: dict[str, str] = {}
    for s in list_stores(conn):
        if s.get("schema_version") is not None and s.get("code_schema_version") is not None \
                and s["schema_version"] < s["code_schema_version"]:
            sid = s["memory_store_id"]
            echo(f"upgrading store {sid} ({s['schema_version']} -> {s['code_schema_version']})")
            try:
                _call(conn, ADMIN_CALLS["upgrade_store"], in_store_id=sid)
            except (Error, oracledb.DatabaseError) as e:
                # each store upgrades under its own lock, in its own DDL: one that fails (left
                # BROKEN with last_error, or busy) does not keep the others back (dba33 F13)
                failed[sid] = " ".join(str(e).split())
                echo(f"store {sid} was not upgraded: {failed[sid]}")
                continue
            done.append(sid)
    left = [f"{sid}: upgrade failed: {msg}" for sid, msg in failed.items()]
    left += [p for p in map(_not_ready, list_stores(conn))
             if p and p.split(":", 1)[0] not in failed]
    if left:
        raise ScriptError(f"packages installed; stores upgraded: {', '.join(done) or 'none'}; "
                          f"{len(left)} store(s) not usable: " + "; ".join(left)
                          + " (`oramem db upgrade` again resumes a store's upgrade)")
    return done


def uninstall(conn: Any, purge: bool, scripts_dir: Optional[str] = None,
              echo: Callable[[str], None] = print) -> int:
    """Run ``plsql/uninstall.sql``. Without ``purge`` it refuses while stores exist (their
    data would be dropped); with ``purge`` the script drops every store first."""
    root = scripts_root(scripts_dir)
    if _installed(conn) and not purge:
        stores = [s["memory_store_id"] for s in list_stores(conn)]
        if stores:
            raise ScriptError(
                f"{len(stores)} store(s) exist ({', '.join(stores[:10])}{'…' if len(stores) > 10 else ''}); "
                "uninstalling drops them with all their data: rerun with --purge --yes"
            )
    return run_script(conn, root / "plsql" / "uninstall.sql", root, echo)


def status(conn: Any) -> dict[str, Any]:
    """What is installed: packages and their status, capabilities, and the stores."""
    objs = _installed(conn)
    out: dict[str, Any] = {"packages": objs, "installed": False, "stores": [], "capabilities": None}
    expected = {f"{t} {p}" for p in PACKAGES for t in ("PACKAGE", "PACKAGE BODY")}
    out["missing"] = sorted(expected - set(objs))
    out["invalid"] = sorted(k for k, s in objs.items() if s != "VALID")
    out["installed"] = not out["missing"] and not out["invalid"]
    if out["installed"]:
        out["capabilities"] = json.loads(_call(conn, ADMIN_CALLS["capabilities"]) or "null")
        out["stores"] = list_stores(conn)
    return out


@dataclass
class Check:
    name: str
    ok: Optional[bool]  # None = could not tell / optional
    detail: str
    fix: str = ""
    required: bool = True

    @property
    def label(self) -> str:
        if self.ok:
            return "OK"
        if self.ok is None or not self.required:
            return "WARN"
        return "FAIL"


def _rows(conn: Any, sql: str, **binds: Any) -> Optional[list[Any]]:
    """Rows of a dictionary query, or None when the view is not readable."""
    with conn.cursor() as cur:
        try:
            cur.execute(sql, **binds)
            result: Optional[list[Any]] = cur.fetchall()
            return result
        except oracledb.DatabaseError:
            return None


def _version(conn: Any) -> tuple[int, ...]:
    parts = re.findall(r"\d+", str(getattr(conn, "version", "") or ""))
    return tuple(int(p) for p in parts)


def doctor(conn: Any) -> list[Check]:
    """Check everything oramem needs and say how to fix what is missing."""
    checks: list[Check] = []
    v = _version(conn)
    checks.append(Check(
        "database version", bool(v) and v[:2] >= MIN_VERSION,
        ".".join(map(str, v)) or "unknown",
        f"oramem needs Oracle AI Database {MIN_VERSION[0]}.{MIN_VERSION[1]} or later (e.g. gvenzl/oracle-free:23)",
    ))

    sys_privs = _rows(conn, "select privilege from user_sys_privs")
    have = {r[0] for r in sys_privs or ()}
    for priv, required, why in (
        ("CREATE TABLE", True, "store tables"),
        ("CREATE SEQUENCE", True, "per-store sequences"),
        ("CREATE PROCEDURE", True, "the oramem packages"),
        ("CREATE JOB", False, "the TTL purge job (stores still work without it; purge_expired() by hand)"),
        ("CREATE MINING MODEL", False, "loading ONNX models for OracleDBEmbedder / hybrid search"),
    ):
        checks.append(Check(
            f"direct grant {priv}", (priv in have) if sys_privs is not None else None,
            why if priv in have else f"missing: needed for {why}",
            f"as a DBA: GRANT {priv} TO <user>; (a direct grant: roles are disabled in definer's-rights code)",
            required,
        ))

    # D14: the default tablespace needs a quota (or UNLIMITED TABLESPACE), else every store is
    # created and its first add fails with ORA-01950. USER_TS_QUOTAS: MAX_BYTES -1 = unlimited.
    ts = _rows(conn, "select default_tablespace from user_users")
    quota = _rows(conn, "select max_bytes from user_ts_quotas where tablespace_name = :ts",
                  ts=ts[0][0]) if ts else None
    unlimited = "UNLIMITED TABLESPACE" in have
    has_quota = unlimited or bool(quota and quota[0][0] is not None and (quota[0][0] == -1 or quota[0][0] > 0))
    checks.append(Check(
        "tablespace quota", True if unlimited else (has_quota if quota is not None else None),
        ("UNLIMITED TABLESPACE" if unlimited else f"quota on {ts[0][0]}" if has_quota and ts
         else f"no quota on {ts[0][0] if ts else 'the default tablespace'}"),
        "as a DBA: ALTER USER <user> QUOTA UNLIMITED ON <default tablespace>; (without it the first add fails "
        "with ORA-01950)",
    ))

    tab_privs = _rows(conn, "select owner, table_name, privilege from user_tab_privs where privilege = 'EXECUTE'")
    granted = {(o, t) for o, t, _ in tab_privs or ()}
    # D14: a grant to PUBLIC also counts in definer's-rights code ("no roles enabled except
    # PUBLIC", docs.oracle.com/error-help/db/pls-00201); USER_TAB_PRIVS does not list it
    public = _rows(conn, "select table_schema, table_name from all_tab_privs where grantee = 'PUBLIC' "
                         "and privilege = 'EXECUTE' and table_name in "
                         "('DBMS_LOCK', 'CTX_DDL', 'DBMS_VECTOR_CHAIN', 'DBMS_HYBRID_VECTOR')")
    granted |= {(o, t) for o, t in public or ()}
    checks.append(Check(
        "EXECUTE ON SYS.DBMS_LOCK", ("SYS", "DBMS_LOCK") in granted if tab_privs is not None else None,
        "store locks (open/drop serialisation)",
        "as a DBA: GRANT EXECUTE ON SYS.DBMS_LOCK TO <user>;",
    ))

    ctx = _rows(conn, "select count(*) from all_objects where owner = 'CTXSYS' and object_name = 'CTX_DDL' "
                      "and object_type = 'PACKAGE'")
    text_ok = bool(ctx and ctx[0][0])
    checks.append(Check(
        "Oracle Text (CTXSYS.CTX_DDL)", text_ok,
        "present and accessible" if text_ok else "not installed or not accessible",
        "install Oracle Text (not in -slim container images) and GRANT EXECUTE ON CTXSYS.CTX_DDL TO <user>; "
        "needed for KEYWORD and HYBRID stores only",
        required=False,
    ))
    checks.append(Check(
        "direct grant EXECUTE ON CTXSYS.CTX_DDL", ("CTXSYS", "CTX_DDL") in granted if tab_privs is not None else None,
        "keyword/hybrid index maintenance from PL/SQL",
        "as a DBA: GRANT EXECUTE ON CTXSYS.CTX_DDL TO <user>;", required=False,
    ))
    # HYBRID stores: definer's-rights calls of DBMS_VECTOR_CHAIN (index preference) and
    # DBMS_HYBRID_VECTOR (search) need a direct grant (review F9); the owner is looked up
    # by 02_grants.sh, so any owner counts here.
    granted_names = {t for _, t in granted}
    for pkg, why in (("DBMS_VECTOR_CHAIN", "creating HYBRID stores (the vectorizer preference)"),
                     ("DBMS_HYBRID_VECTOR", "HYBRID search")):
        checks.append(Check(
            f"direct grant EXECUTE ON {pkg}", (pkg in granted_names) if tab_privs is not None else None,
            why if pkg in granted_names else f"missing: needed for {why}",
            f"as a DBA: GRANT EXECUTE ON <owner>.{pkg} TO <user>; (owner: SELECT owner FROM dba_objects "
            f"WHERE object_name = '{pkg}' AND object_type = 'PACKAGE'); needed for HYBRID stores only",
            required=False,
        ))
    roles = _rows(conn, "select granted_role from user_role_privs")
    checks.append(Check(
        "role CTXAPP", ("CTXAPP",) in {tuple(r) for r in roles or ()} if roles is not None else None,
        "Oracle Text preferences", "as a DBA: GRANT CTXAPP TO <user>; (DB_DEVELOPER_ROLE includes it)",
        required=False,
    ))

    vm = _rows(conn, "select value from v$parameter where name = 'vector_memory_size'")
    if vm is None:
        checks.append(Check("vector memory (VECTOR_MEMORY_SIZE)", None, "V$PARAMETER is not readable by this user",
                            "check as a DBA: SHOW PARAMETER vector_memory_size (or GRANT SELECT ON V_$PARAMETER)"))
    else:
        size = int(vm[0][0]) if vm and vm[0][0] is not None else 0
        checks.append(Check(
            "vector memory (VECTOR_MEMORY_SIZE)", size > 0, f"{size // (1 << 20)} MB" if size else "0 (no vector pool)",
            "as a DBA: ALTER SYSTEM SET vector_memory_size = 512M SCOPE = BOTH; (HNSW indexes need it)",
        ))

    models = _rows(conn, "select model_name from user_mining_models where algorithm = 'ONNX' order by model_name")
    names = [r[0] for r in models or ()]
    checks.append(Check(
        "in-database ONNX models", bool(names) if models is not None else None,
        ", ".join(names) if names else "none loaded",
        "load one with DBMS_VECTOR.LOAD_ONNX_MODEL to use OracleDBEmbedder or HYBRID stores",
        required=False,
    ))

    objs = _installed(conn)
    expected = {f"{t} {p}" for p in PACKAGES for t in ("PACKAGE", "PACKAGE BODY")}
    missing = sorted(expected - set(objs))
    invalid = sorted(k for k, s in objs.items() if s != "VALID")
    checks.append(Check(
        "oramem packages", not missing and not invalid,
        "installed and VALID" if not (missing or invalid)
        else "; ".join(filter(None, [f"missing {', '.join(missing)}" if missing else None,
                                     f"invalid {', '.join(invalid)}" if invalid else None])),
        "run `oramem db install` (or `oramem db upgrade`)",
    ))
    return checks


def format_checks(checks: Iterable[Check]) -> str:
    lines = []
    for c in checks:
        lines.append(f"[{c.label:4}] {c.name}: {c.detail}")
        if c.label != "OK" and c.fix:
            lines.append(f"       fix: {c.fix}")
    return "\n".join(lines)
