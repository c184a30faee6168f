"""left34 item 1 on the PL/SQL API: an id that is only white space names no one. A PL/SQL
application calling the packages directly (not through the Python normaliser) had " " stored
as a record id or scope value and read as a scope; now ``oramem_registry.check_id`` refuses it
(-20001) at every entry point that takes an id, with the same set of white-space characters as
Python's ``str.isspace`` (oramem.normalize.check_id). Static-checked, not run against Oracle."""

from __future__ import annotations

import re

from .test_round3_findings import code
from .test_store_findings import src, unit


def _white_space_constant() -> set[int]:
    body = code("oramem_registry.pkb")
    m = re.search(r"gc_white_space\s+CONSTANT\s+NVARCHAR2\(\d+\)\s*:=\s*UNISTR\((.*?)\)\s*;", body, re.S)
    assert m, "oramem_registry.pkb must declare gc_white_space as an NVARCHAR2 UNISTR constant"
    literal = "".join(re.findall(r"'([^']*)'", m.group(1)))
    assert re.fullmatch(r"(\\[0-9A-Fa-f]{4})+", literal), literal
    return {int(h, 16) for h in re.findall(r"\\([0-9A-Fa-f]{4})", literal)}


def test_the_plsql_white_space_set_is_pythons():
    python = {c for c in range(0x110000) if chr(c).isspace()}
    assert _white_space_constant() == python


def test_check_id_is_declared_and_refuses_white_space_only_with_invalid_argument():
    spec = src("oramem_registry.pks")
    assert re.search(r"PROCEDURE\s+check_id\s*\(\s*in_value\s+IN\s+VARCHAR2\s*,\s*in_argument\s+IN\s+VARCHAR2\s*\)\s*;",
                     spec, re.I)
    body = unit(code("oramem_registry.pkb"), "check_id")
    cond = re.search(r"IF\s+in_value\s+IS\s+NOT\s+NULL\s+AND\s+LTRIM\(TO_NCHAR\(in_value\),\s*gc_white_space\)\s+IS\s+NULL"
                     r"\s+THEN(.*?)END\s+IF\s*;", body, re.S | re.I)
    assert cond, body
    assert "oramem_errors.gc_invalid_argument" in cond.group(1)
    assert "visible character" in cond.group(1)


def _checks(body: str, value: str) -> bool:
    return re.search(rf"oramem_registry\.check_id\(\s*{re.escape(value)}\s*,", body) is not None


def test_every_store_entry_point_that_takes_an_id_checks_it():
    store = code("oramem_store.pkb")
    assert _checks(unit(store, "get_id"), "l_val"), "scope members of an add batch (thread/user/agent)"
    assert _checks(unit(store, "add_json"), "l_ids(i + 1)"), "record ids of an add batch"
    for name, value in (("get_json", "in_record_id"), ("list_thread_messages_json", "in_thread_id"),
                        ("update_json", "l_id"), ("delete_record_json", "in_record_id"),
                        ("delete_thread_json", "in_thread_id")):
        assert _checks(unit(store, name), value), name
    # scope values of list_json and search_json go through scope_condition
    assert _checks(unit(code("oramem_filter.pkb"), "scope_condition"), "in_value")


def test_the_check_comes_before_the_first_write_of_a_delete():
    """Before anything is written: the check precedes the cascade's lock and DELETEs."""
    body = unit(code("oramem_store.pkb"), "delete_record_json")
    check = re.search(r"oramem_registry\.check_id\(\s*in_record_id", body)
    first_delete = re.search(r"\bDELETE\b|lock_erasers", body)
    assert check and first_delete and check.start() < first_delete.start()


def test_a_plsql_cascade_writes_no_receipt_and_its_spec_says_so_and_what_to_do():
    """left34 item 5 (documented, not changed): ``delete_record_json``'s cascade does not call
    ``oramem_admin.log_erasure`` (the receipt's salted HMAC, token hashes and scan are the
    Python eraser's); the spec must say so and name the remedy, so a PL/SQL application is not
    left believing its cascade left SC-14's proof. A body that starts logging must update the
    spec (and this test)."""
    body = unit(code("oramem_store.pkb"), "delete_record_json")
    assert "log_erasure" not in body
    spec = " ".join(src("oramem_store.pks").split())
    assert "writes no erasure-log receipt" in spec and "runs it after this call" in spec
