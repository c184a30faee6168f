"""PL/SQL text tests for the findings of shared/reviews/oracle-store.md (S1-S25): each
fails on the code the review read (commit 9a1eaa5) and passes on the fix. They read the
PL/SQL; what only a database can show is in the Oracle contract run (tests/contract,
tests/oracle). Static-checked, not run against Oracle."""

from __future__ import annotations

import re

from oramem.normalize import DEFAULT_STORE_ID, MAX_ID_LENGTH

from .plsql_gate import REPO


def src(name: str) -> str:
    return (REPO / "plsql" / name).read_text()


def unit(text: str, name: str) -> str:
    """The body of subprogram ``name`` (the definition, not a forward declaration)."""
    for m in re.finditer(rf"\b(?:FUNCTION|PROCEDURE)\s+{name}\b", text, re.IGNORECASE):
        end = re.search(rf"\bEND\s+{name}\s*;", text[m.end():], re.IGNORECASE)
        head = text[m.end(): m.end() + (end.start() if end else 0)]
        if end and re.search(r"\)\s*(RETURN\s+\w+\s*)?(IS|AS)\b|^\s*(IS|AS)\b", head[:2000], re.IGNORECASE):
            return head
    raise AssertionError(f"no definition of {name}")


def branch(body: str, start: str, stop: str) -> str:
    i = body.index(start)
    return body[i: body.index(stop, i + len(start))]


# S1: profile rows must not leak into thread/user/agent scopes (SC-6.2, the SQLite columns).
def test_s1_thread_scope_reads_only_thread_id():
    body = unit(src("oramem_filter.pkb"), "scope_condition")
    thread = branch(body, "WHEN 'thread' THEN", "WHEN 'user' THEN")
    assert "record_type" not in thread, "a thread scope must not keep profiles (S1)"


def test_s1_user_and_agent_scopes_use_the_effective_column():
    body = unit(src("oramem_filter.pkb"), "scope_condition")
    # the old rule let every profile of the *other* kind through; the effective column
    # (record_id for the own profile type, the scope column otherwise) never does
    assert "l_other" not in body
    assert "IN (''user_profile'', ''agent_profile'')" not in body
    assert body.count("'user_profile'") == 1 and body.count("'agent_profile'") == 1
    assert ".record_type <> '''" in body


# S2: an expired, not yet purged record is revived by an update that carries a ttl (SC-5.6).
def test_s2_update_locks_expired_rows_and_returns_0_only_without_ttl():
    body = unit(src("oramem_store.pkb"), "update_json")
    select = branch(body, "'SELECT r.event_ts", "FOR UPDATE")
    assert "expires_at >" not in select, "the lock must not skip expired rows (S2)"
    assert re.search(r"l_old_exp\s*<=\s*oramem_registry\.utc_now\s+AND\s+NOT\s+l_req\.has\('ttl'\)\s+THEN\s+RETURN 0",
                     body), "expired + no ttl must return 0 before anything is written"


# S3: a NULL store id is the same store as Python's default.
def test_s3_null_store_id_is_pythons_default_store():
    m = re.search(r"gc_default_store_id\s+CONSTANT\s+VARCHAR2\(\d+(?: CHAR)?\)\s*:=\s*'([^']+)'",
                  src("oramem_registry.pks"))
    assert m and m.group(1) == DEFAULT_STORE_ID


# S8: ids are checked in characters against Python's bound; buffers are CHAR (rule (b)).
def test_s8_id_limit_is_pythons():
    body = src("oramem_store.pkb")
    m = re.search(r"gc_max_id_chars\s+CONSTANT\s+PLS_INTEGER\s*:=\s*(\d+)", body)
    assert m and int(m.group(1)) == MAX_ID_LENGTH
    assert "in_max_len IN PLS_INTEGER DEFAULT gc_max_id_chars" in unit(body, "get_text")
    assert re.search(r"TYPE vc_tab_t\s+IS TABLE OF VARCHAR2\(\d+ CHAR\)", body)


# S4 / F12: filter SQL that grows with the input goes through the checked cat(); list
# elements count as nodes.
def test_s4_filter_growth_is_bounded_and_list_elements_count():
    body = src("oramem_filter.pkb")
    cat = unit(body, "cat")
    assert "gc_max_sql_bytes" in cat and "fail(" in cat  # fail() raises gc_invalid_filter (-20004)
    assert "oramem_errors.gc_invalid_filter" in unit(body, "fail")
    for name in ("compile_op", "compile_ops", "compile_object"):
        assert not re.search(r"\b(l_sql|l_part)\s*:=\s*\1\s*\|\|", unit(body, name)), name
    op = unit(body, "compile_op")
    for which in ("'$in'", "'$array_contains'", "'$array_contains_any'"):
        part = op[op.index(f"WHEN {which} THEN"):]
        loop = part[part.index("FOR i IN 0"): part.index("END LOOP")]
        assert "count_node;" in loop, f"{which} list elements must count as nodes"
    m = re.search(r"gc_max_sql_bytes\s+CONSTANT\s+PLS_INTEGER\s*:=\s*(\d+)", src("oramem_filter.pks"))
    # room for the SELECT, three scope conditions and 32 levels of <= 40-byte wrappers
    assert m and int(m.group(1)) + 32 * 40 + 4000 <= 32767


def test_s4_path_literals_are_bounded():
    body = src("oramem_filter.pkb")
    assert "gc_max_path_bytes" in unit(body, "exists_sql")
    assert "gc_max_path_bytes" in unit(body, "nonscalar_equal")


# S11: depth counts object levels once, as oramem.filters (32 levels accepted).
def test_s11_depth_counts_each_object_level_once():
    body = src("oramem_filter.pkb")
    value = unit(body, "compile_value")
    assert "compile_object(l_obj, in_path, in_where, in_depth, io_binds)" in value
    assert "compile_ops(l_obj, in_path, in_where, in_depth, io_binds)" in value
    assert "check_depth(in_depth)" in unit(body, "compile_object")
    assert "check_depth" not in value


# S12: a 4000-character exact-list value can be 16000 bytes: the buffer must hold it
# until the LENGTHB check.
def test_s12_nonscalar_buffer_holds_4000_characters():
    body = unit(src("oramem_filter.pkb"), "nonscalar_equal")
    m = re.search(r"l_txt\s+VARCHAR2\((\d+)( CHAR)?\)", body)
    assert m and (int(m.group(1)) >= 16000 or m.group(2))
    assert "LENGTHB(l_txt) > 4000" in body
