"""The one table mapping Oracle error codes to oramem exceptions.

oramem's own codes (-20001..-20999) are declared once in ``plsql/oramem_errors.pks``; the
static gate (``tests/plsql``) checks that :data:`ERROR_CLASSES` covers exactly those codes.
A few ORA- codes the packages let through are mapped too (ORACLE_NOTES 11.4). Mapping is
by ``error.code``, never by message text. The raised exception keeps the database error as
``__cause__`` and its message says what to do next.
"""

from __future__ import annotations

import re
from typing import Any

from ..errors import CapabilityError, DuplicateRecordError, SchemaError, StoreBusy, StoreNotFound, StoreSettingsMismatch

__all__ = ["ERROR_CLASSES", "translate", "error_code"]

_INSTALL_HINT = "run `oramem db status` / `oramem db install` as the schema owner"

#: code (positive, as python-oracledb reports ``error.code``) -> (exception class, what to do)
ERROR_CLASSES: dict[int, tuple[type[Exception], str]] = {
    # oramem_errors.pks: argument errors raised by the PL/SQL validation
    20001: (ValueError, "fix the named argument"),
    20002: (ValueError, "the request payload was rejected; this is a driver/package version mismatch - "
                        "check `oramem db status`"),
    20003: (ValueError, "use one of the record types of SC-2.1"),
    20004: (ValueError, "fix the named metadata-filter key or operator (SC-9)"),
    20005: (DuplicateRecordError, "use record ids that are not stored yet and unique within the call"),
    20006: (ValueError, "vectors must have the store's vector_dim elements (and one per retrieval row)"),
    20007: (ValueError, "pass ISO-8601 times, e.g. 2026-01-31T12:00:00+00:00"),
    20008: (ValueError, "give the record a timestamp, or use ttl_anchor='created_at'"),
    20009: (ValueError, "search with a strategy this store supports, or reopen it with "
                        "CREATE_IF_NECESSARY and the wider strategy"),
    20010: (ValueError, "memory_store_id must match ^[A-Za-z][A-Za-z0-9_]{0,15}$"),
    20011: (ValueError, "use a plain [schema.][package.]name identifier"),
    20012: (ValueError, "rephrase the keyword query with plain words"),
    # state errors
    20101: (StoreNotFound, "create it with schema_policy=CREATE_IF_NECESSARY (or CREATE_IF_EMPTY)"),
    20102: (SchemaError, "open the existing store instead, or use schema_policy=RECREATE to replace it"),
    20103: (StoreSettingsMismatch, "open with the persisted setting, or recreate the store"),
    20104: (SchemaError, "upgrade it: schema_policy=CREATE_IF_NECESSARY or `oramem db upgrade`"),
    20105: (SchemaError, "repair it with schema_policy=CREATE_IF_NECESSARY, or RECREATE it"),
    20106: (SchemaError, "wait for the running create/upgrade/drop, or repair it with CREATE_IF_NECESSARY"),
    20107: (SchemaError, "upgrade oramem (pip install -U oramem, then `oramem db upgrade`)"),
    # -20108: an open with another embedder (OracleEngine._refused_open gives the SQLite engine's
    # message when describe_store names the recorded one), or a refusal inside a call
    # (add/update/search, check_embedder) of a store object or KnowledgeMemory opened before
    # another session's reembed (ora44, rek47): the advice covers both
    20108: (StoreSettingsMismatch, "open the store with the embedder it records now (oramem_admin.describe_store "
                                   "names it): close this store object and any KnowledgeMemory opened on it before "
                                   "another session's reembed, and open them again with that embedder "
                                   "(docs/embeddings.md)"),
    20201: (StoreBusy, "another session holds the store lock; retry later"),
    20301: (CapabilityError, "ask the DBA for the named feature; `oramem db doctor` lists what is missing"),
    20302: (CapabilityError, "ask the DBA for the named direct grant; `oramem db doctor` lists them"),
    # ORA- codes passed through by the packages (ORACLE_NOTES 11.4)
    1: (DuplicateRecordError, "a record with this id already exists"),
    54: (StoreBusy, "the store's rows or objects are locked by another session (commit it, or retry)"),
    60: (StoreBusy, "deadlock with another session; retry the call"),
    51906: (StoreBusy, "a vector index is being changed by another session; retry"),
    51962: (CapabilityError, "the vector memory pool is full: ask the DBA to raise VECTOR_MEMORY_SIZE"),
    51803: (ValueError, "vectors must have the store's vector_dim elements"),
    40441: (ValueError, "the JSON payload is invalid"),
    29902: (ValueError, "Oracle Text rejected the query; rephrase it with plain words"),
    1031: (CapabilityError, "a privilege is missing; `oramem db doctor` lists the grants oramem needs"),
    27486: (CapabilityError, "CREATE JOB is missing; ask the DBA for a direct GRANT CREATE JOB"),
    1950: (CapabilityError, "the schema has no quota on its tablespace; ask the DBA for "
                            "ALTER USER <user> QUOTA UNLIMITED ON <tablespace> (`oramem db doctor` checks it)"),
    # the packages are missing, invalid, or their state was reset by a recompile
    # ORA-06550 also comes from the packages' own dynamic blocks when the owner lacks a direct
    # grant (review F10; the PL/SQL side maps those to -20302, oracle-store S19): the advice
    # covers both, and the message keeps the PLS- line naming the identifier.
    6550: (SchemaError, "a PL/SQL unit is missing, invalid or not accessible: if the identifier named is an "
                        "oramem package, " + _INSTALL_HINT + "; if it is CTX_DDL, DBMS_LOCK, DBMS_VECTOR_CHAIN or "
                        "DBMS_HYBRID_VECTOR, the schema owner needs a direct GRANT EXECUTE on it "
                        "(`oramem db doctor` lists the grants)"),
    4063: (SchemaError, "an oramem package has compilation errors; " + _INSTALL_HINT),
    4068: (SchemaError, "the oramem packages were recompiled while in use; retry the call"),
    4061: (SchemaError, "the oramem packages were recompiled while in use; retry the call"),
    4065: (SchemaError, "the oramem packages were recompiled while in use; retry the call"),
    942: (SchemaError, "an oramem table is missing; " + _INSTALL_HINT),
}

_STACK_LINE = re.compile(r"^(ORA-06512|ORA-04088|ORA-06550: line)", re.MULTILINE)
_PREFIX = re.compile(r"^ORA-\d{5}:\s*")


#: D11/N8: "If the body of an instantiated, stateful package is recompiled ..., the next
#: invocation of a subprogram in the package causes Oracle Database to discard the existing
#: package state and raise the exception ORA-04068" (PL/SQL Language Reference 23, Package
#: State); ORA-04061/04065 are the same reset seen through a dependent unit. The call did not
#: run, and the next one finds fresh state, so the engines retry it once outside a block.
PACKAGE_STATE_RESET = frozenset({4068, 4061, 4065})


def package_state_reset(exc: BaseException) -> bool:
    """Is ``exc`` the one-time error of a session whose package state was discarded?"""
    return error_code(exc) in PACKAGE_STATE_RESET


def error_code(exc: BaseException) -> int | None:
    """``error.code`` of a python-oracledb error (None for anything else)."""
    args = getattr(exc, "args", ())
    if args and hasattr(args[0], "code"):
        code = args[0].code
        return int(code) if isinstance(code, int) else None
    return None


def _message(exc: BaseException) -> str:
    args = getattr(exc, "args", ())
    raw = getattr(args[0], "message", None) if args else None
    if not isinstance(raw, str):
        raw = str(exc)
    # first line without the ORA-NNNNN prefix; ORA-06512 stack lines dropped
    lines = [ln for ln in raw.splitlines() if ln.strip() and not _STACK_LINE.match(ln)]
    first = lines[0] if lines else raw
    return _PREFIX.sub("", first).strip()


def translate(exc: BaseException) -> BaseException:
    """The oramem exception for a python-oracledb error (``exc`` itself when unmapped).
    The caller raises the result ``from exc``."""
    code = error_code(exc)
    if code is None or code not in ERROR_CLASSES:
        return exc
    cls, advice = ERROR_CLASSES[code]
    text = _message(exc)
    full = getattr(exc.args[0], "full_code", None) or f"ORA-{code:05d}"
    new: Any = cls(f"{text} ({full}; {advice})")
    new.oracle_code = code
    result: BaseException = new
    return result
