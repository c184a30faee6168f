"""PL/SQL text tests for the findings of shared/reviews/oracle-store.md (S1-S25): each
fails on the code the review read (commit 9a1eaa5) and passes on the fix. They read the
PL/SQL; what only a database can show is in the Oracle contract run (tests/contract,
tests/oracle). Static-checked, not run against Oracle."""

from __future__ import annotations

import re

from oramem.normalize import DEFAULT_STORE_ID, MAX_ID_LENGTH

from .plsql_gate import REPO, _code_without_comments


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


# S4 (reopened, round 3): the compiled filter and the statements around it are CLOBs, so a
# filter SQLite accepts is not refused for its SQL size; list elements still count as nodes,
# and the node bound (one bind per value) is far above what the 16,000-byte cap allowed.
def test_s4_filter_compiles_to_a_clob_without_a_byte_cap():
    body, spec = src("oramem_filter.pkb"), src("oramem_filter.pks")
    assert "gc_max_sql_bytes" not in body + spec + src("oramem_search.pkb") + src("oramem_store.pkb")
    assert re.search(r"FUNCTION compile_filter\((?:[^)]|\n)*?\)\s*RETURN CLOB;", spec)
    assert re.search(r"FUNCTION query_clob\(\s*in_sql\s+IN CLOB,", spec)
    cat = unit(body, "cat")
    assert re.search(r"in_left\s+IN CLOB", cat) and "RETURN CLOB" in cat and "fail(" not in cat
    for name, bufs in (("compile_op", ("l_sql",)), ("compile_ops", ("l_sql",)),
                       ("compile_object", ("l_part", "l_sql"))):
        u = unit(body, name)
        for buf in bufs:
            assert re.search(rf"\b{buf}\s+CLOB;", u), (name, buf)
            assert not re.search(rf"\b{buf}\s+VARCHAR2", u), (name, buf)
    assert re.search(r"in_cond IN CLOB\s*\)\s*RETURN CLOB", unit(body, "negate"))
    op = unit(body, "compile_op")
    for which in ("'$in'", "'$array_contains'", "'$array_contains_any'"):
        part = op[op.index(f"WHEN {which} THEN"):]
        loop = part[part.index("FOR i IN 0"): part.index("END LOOP")]
        assert "count_node;" in loop, f"{which} list elements must count as nodes"
    m = re.search(r"gc_max_nodes\s+CONSTANT\s+PLS_INTEGER\s*:=\s*(\d+)", spec)
    assert m and int(m.group(1)) >= 2000 * 2 + 300  # a 2,000-value $in, a 300-node $or
    assert "gc_max_nodes" in unit(body, "count_node") and "fail(" in unit(body, "count_node")
    # the list statement of oramem_store is a CLOB, parsed through query_clob (DBMS_SQL.PARSE)
    lj = unit(src("oramem_store.pkb"), "list_json")
    assert re.search(r"l_rwhere\s+CLOB;", lj) and re.search(r"l_sql\s+CLOB;", lj)
    assert "oramem_filter.query_clob(l_sql, l_binds)" in lj
    assert "DBMS_SQL.PARSE(l_cursor, in_sql, DBMS_SQL.NATIVE)" in unit(body, "query_clob")


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


# S9: uninstall must not drop the registry while stores it cannot drop are registered,
# and always drops orphaned purge jobs.
def test_s9_uninstall_stops_when_stores_cannot_be_dropped():
    text = src("uninstall.sql")
    first = text[text.index("PROMPT oramem: dropping every store"): text.index("\n/\n")]
    assert "ELSIF l_tables = 1 THEN" in first and "RAISE_APPLICATION_ERROR(" in first
    assert "ORAMEM\\_PURGE\\_%" in text
    # the stop comes before the catalog tables are dropped
    assert text.index("RAISE_APPLICATION_ERROR(") < text.index("DROP TABLE ")


# S10: a ttl far in the future is a clear -20001, not ORA-01841/ORA-01873.
def test_s10_ttl_days_checked_against_year_9999():
    body = unit(src("oramem_store.pkb"), "ttl_expiry")
    check = body.index("DATE '9999-12-31' - CAST(l_base AS DATE)")
    assert "bad_argument(" in body[check: check + 300]
    assert check < body.index("NUMTODSINTERVAL")


# S14: a cascade always emits its event (names the actor) and calls the hook.
def test_s14_cascade_event_always_built():
    body = unit(src("oramem_store.pkb"), "delete_record_json")
    cascade = branch(body, "ELSIF in_cascade = 1", "\n      ELSE\n")
    assert "IF l_types.COUNT > 0 THEN" not in cascade
    assert "ELSE 'cascade' END);" in cascade and "call_hook(l_store, l_event);" in cascade  # N4: or 'forget'


# SC-13.2 (found by the stateful tenant model, 2026-12-06 h): the thread row names only who
# opened the thread and decides nothing about erasure, so an actor's cascade does not count
# it among the thread's records: a thread another user opened whose records of his are gone
# is the actor's alone and goes whole (the SQLite engine: mutations.release_actor). Every
# "another record in the thread" subquery of the cascade leaves the thread row out.
def test_the_cascade_never_counts_the_thread_row_as_another_users_record():
    body = unit(src("oramem_store.pkb"), "delete_record_json")
    cascade = branch(body, "ELSIF in_cascade = 1", "\n      ELSE\n")
    others = re.findall(r"WHERE o\.thread_id = (?:p\.thread_id|t\.record_id)(.*?)' \|\| l_other", cascade)
    assert len(others) == 3 and all(o == " AND o.record_type <> ''thread'' AND " for o in others), others
    from oramem.sqlite import mutations
    import inspect
    assert inspect.getsource(mutations.release_actor).count("AND o.record_type <> 'thread' AND {other}") == 2


# SC-13.3 / SC-13.4 with SC-5.4 (2026-12-06 i): only live records decide which threads a
# cascade takes whole, and another actor's expired record is not removed with the thread
# (SC-13.1; the purge's). Every "another record in the thread" subquery carries the expiry
# test after l_other, the DELETE keeps the other actor's expired rows, and each of the three
# dynamic statements binds exactly as many values as it has placeholders (Oracle binds a
# SQL statement's placeholders by position, one USING value per occurrence).
_CASCADE_STATEMENTS = re.compile(r"EXECUTE IMMEDIATE\s+(.*?)\n\s*(BULK COLLECT INTO [^\n]*?\s+)?USING ([^;]*);", re.S)


def _cascade_texts(cascade: str, l_type: str) -> list[tuple[str, list[str], list[str]]]:
    """Each dynamic statement of the cascade as the database gets it for ``l_type``, with
    its USING values and its RETURNING targets."""
    def case_value(name: str) -> str:
        m = re.search(name + r" := CASE l_type\s+WHEN 'user_profile' THEN '(.*?)'\s+ELSE '(.*?)'\s+END;", cascade, re.S)
        assert m, name
        return m.group(1) if l_type == "user_profile" else m.group(2)

    env = {"l_rec_tab": "T", "l_col": "user_id", "l_other": case_value("l_other"), "l_mine_not": case_value("l_mine_not")}
    out = []
    for expr, _, using in _CASCADE_STATEMENTS.findall(cascade):
        parts = re.findall(r"'((?:[^']|'')*)'|(\w+)", expr)
        text = "".join(lit.replace("''", "'") if lit or not name else env[name] for lit, name in parts)
        values, _, targets = using.partition("RETURNING BULK COLLECT INTO")
        out.append((text, [v.strip() for v in values.split(",")], [t.strip() for t in targets.split(",") if t.strip()]))
    return out


def test_the_cascade_counts_only_live_records_and_binds_each_placeholder():
    body = unit(src("oramem_store.pkb"), "delete_record_json")
    cascade = branch(body, "ELSIF in_cascade = 1", "\n      ELSE\n")
    for l_type in ("user_profile", "agent_profile"):
        statements = _cascade_texts(cascade, l_type)
        # the removed threads, the actor's threads (actor_thread_ids, 2026-12-07 k), the thread
        # rows' update, the delete
        assert len(statements) == 4, statements
        for text, values, targets in statements:
            sql, _, returning = text.partition(" RETURNING ")
            literals_removed = re.sub(r"'[^']*'", "''", sql)
            assert len(re.findall(r":\w+", literals_removed)) == len(values), (text, values)
            assert len(re.findall(r":\w+", returning)) == len(targets), (text, targets)
            # every subquery over another record of the thread counts live records only
            for sub in re.findall(r"o\.record_type <> 'thread' AND (.*?)\)\)", sql):
                assert sub.endswith("AND (o.expires_at IS NULL OR o.expires_at > :n"), sub
        delete = statements[3][0]
        mine_not = "(r.user_id IS NOT NULL AND r.user_id <> :b)" if l_type == "user_profile" \
            else "(r.agent_id IS NULL OR r.agent_id <> :b)"
        assert ("AND NOT (r.record_type <> 'thread' AND r.expires_at IS NOT NULL AND r.expires_at <= :x AND "
                + mine_not) in delete
        assert statements[3][1] == ["l_type", "in_record_id", "in_record_id", "in_record_id", "in_record_id",
                                    "l_now", "l_now", "in_record_id"]
    from oramem.sqlite import mutations
    import inspect
    assert inspect.getsource(mutations.release_actor).count("AND (o.expires_at IS NULL OR o.expires_at > :now)") == 2
    assert "expires_at <= :now AND {other}" in inspect.getsource(mutations.cascade_victims)


# S15: delete counts 1 only for a visible record.
def test_s15_delete_counts_only_visible_records():
    body = unit(src("oramem_store.pkb"), "delete_record_json")
    assert body.count("RETURNING BULK COLLECT INTO l_types, l_ids, l_exps") == 2
    assert body.count("l_exps(") >= 3 and "l_count := l_types.COUNT" not in body


# S17: revector on a store without vector_dim never builds TO_VECTOR(:1, , FLOAT32).
def test_s17_revector_skips_the_update_without_vector_dim():
    body = unit(src("oramem_store.pkb"), "update_json")
    # fake40: the vectors are checked and collected before the record is looked up; a store
    # without vector_dim collects none, and the UPDATE is built only for collected vectors
    pre = branch(body, "ELSIF l_retrieval = 'revector' THEN", "' FOR UPDATE'")
    skip = pre.index("CONTINUE WHEN l_store.vector_dim IS NULL;")
    assert pre.index("get_vector(") < skip < pre.index("l_c_vecs(i + 1)  := l_vec;")
    rev = branch(body, "WHEN 'revector' THEN", "WHEN 'strip_vectors' THEN")
    assert "get_vector(" not in rev and "l_c_vecs(" not in rev.replace("l_c_vecs(i)", "")
    assert rev.index("IF l_c_vecs.COUNT > 0 THEN") < rev.index("TO_VECTOR(")


# S19: a missing direct CTX_DDL grant is -20302 naming the grant, not a raw ORA-06550.
def test_s19_sync_search_index_maps_ora_06550():
    text = src("oramem_store.pkb")
    assert re.search(r"PRAGMA EXCEPTION_INIT\(e_plsql_compile, -6550\)", text)
    body = unit(text, "sync_search_index")
    handler = body[body.index("WHEN e_plsql_compile THEN"):]
    assert "gc_privilege_missing" in handler[:600] and "GRANT EXECUTE ON CTXSYS.CTX_DDL" in handler[:600]  # F10 check first


# S21: implicit threads in first-use order (a dense list), not associative-array key order.
def test_s21_implicit_threads_in_first_use_order():
    body = unit(src("oramem_store.pkb"), "add_json")
    assert "l_new_thr.FIRST" not in body and "l_new_thr.NEXT" not in body
    assert "l_thr_order(l_thr_order.COUNT + 1) := l_threads(i);" in body
    assert "FOR t IN 1 .. l_thr_order.COUNT LOOP" in body


# S25: ddl/README.md describes how 001_catalog.sql is written (IF NOT EXISTS).
def test_s25_ddl_readme_matches_the_catalog_script():
    readme = (REPO / "ddl" / "README.md").read_text()
    catalog = (REPO / "ddl" / "001_catalog.sql").read_text()
    assert "IF NOT EXISTS" in catalog and "IF NOT EXISTS" in readme
    assert "sits in a PL/SQL block that first checks" not in readme


# S18: a deletion hook that writes through oramem_store is refused before the nested
# call's savepoint (a fixed name) could erase the outer one; the check is the first
# declaration, whose exception skips the nested call's own ROLLBACK TO SAVEPOINT.
def test_s18_writes_from_a_hook_are_refused_before_any_savepoint():
    text = src("oramem_store.pkb")
    hook = unit(text, "call_hook")
    assert "g_hook_depth := g_hook_depth + 1;" in hook and "g_hook_depth - 1" in hook
    for name in ("add_json", "update_json", "delete_record_json", "delete_thread_json", "purge_rows"):
        body = unit(text, name)
        decl = body[: re.search(r"\n   BEGIN\n", body).start()]
        first = [ln for ln in decl.splitlines() if re.match(r"\s+l_\w+\s", ln)][0]
        assert "not_in_hook(" in first, f"{name}: the guard must be the first declaration"


# S22: the scheduler path keeps no per-row event DOM and does not re-parse a CLOB.
def test_s22_purge_expired_keeps_no_events():
    text = src("oramem_store.pkb")
    purge = unit(text, "purge_expired")
    assert "JSON_OBJECT_T.parse" not in purge and "purge_expired_json" not in purge
    assert re.search(r"purge_rows\([^;]*FALSE", purge)
    rows = unit(text, "purge_rows")
    assert "IF in_collect THEN" in rows and "io_events.append(l_event);" in rows


# S5: a nested subset match requires an object at each nested level (outside negation).
def test_s5_nested_subset_match_requires_an_object():
    value = unit(src("oramem_filter.pkb"), "compile_value")
    guard = value.index(""".type() == "object")""")
    assert guard < value.index("compile_object(l_obj, in_path, in_where, in_depth, io_binds)")
    assert "negate(" not in value


# S16: explicit content "" is kept as an empty (non-NULL) CLOB.
def test_s16_empty_string_content_is_not_null():
    body = unit(src("oramem_store.pkb"), "get_long_text")
    assert "EMPTY_CLOB()" in body and "IF l_val IS NULL THEN" in body


# S6: every key SQLite accepts is written into the SQL/JSON path, escaped, never refused
# by an allow-list. The CASE table of path_step is read from the PL/SQL and applied to the
# fuzz suite's keys: it must give the key as the body of a JSON string (what
# json.dumps(key, ensure_ascii=False) writes), with single quotes doubled for the SQL literal.
def _plsql_literal(text: str) -> str:
    return text[1:-1].replace("''", "'")


def _path_step_table(body: str):
    chars, codes, below_32 = {}, {}, None
    for m in re.finditer(r"WHEN l_ch = ('(?:[^']|'')*')\s+THEN ('(?:[^']|'')*')", body):
        chars[_plsql_literal(m.group(1))] = _plsql_literal(m.group(2))
    for m in re.finditer(r"WHEN l_code = (\d+)\s+THEN ('(?:[^']|'')*')", body):
        codes[int(m.group(1))] = _plsql_literal(m.group(2))
    m = re.search(r"WHEN l_code < 32\s+THEN '\\u00' \|\| SUBSTR\('0123456789ABCDEF', TRUNC\(l_code / 16\) \+ 1, 1\)"
                  r"\s*\|\| SUBSTR\('0123456789ABCDEF', MOD\(l_code, 16\) \+ 1, 1\)", body)
    if m:
        below_32 = lambda code: "\\u00" + "0123456789ABCDEF"[code // 16] + "0123456789ABCDEF"[code % 16]  # noqa: E731
    assert re.search(r"ELSE l_ch\s+END;", body), "every other character must be written as itself"
    return chars, codes, below_32


def _escape_like_path_step(key: str, table) -> str:
    chars, codes, below_32 = table
    out = []
    for ch in key:
        if ch in chars:
            out.append(chars[ch])
        elif ord(ch) in codes:
            out.append(codes[ord(ch)])
        elif ord(ch) < 32:
            assert below_32 is not None, f"no escape for U+{ord(ch):04X}"
            out.append(below_32(ord(ch)))
        else:
            out.append(ch)
    return "".join(out)


def test_s6_filter_keys_are_escaped_in_the_path_not_refused():
    import json

    body = src("oramem_filter.pkb")
    assert not re.search(r"FUNCTION\s+key_step\b", body), "the allow-list key_step is gone"
    step = unit(body, "path_step")
    assert "REGEXP_LIKE" not in step and "LENGTH(in_key) > 128" not in step
    assert "gc_max_path_bytes" in step and "fail(" in step, "the path grows with a checked bound"
    assert "path_step(in_path, l_key, where_of(in_where, l_key))" in unit(body, "compile_object")
    table = _path_step_table(step)
    keys = ["a", "a.b", 'q"t', "ap'o", "d$x", "b\\s", "[0]", "s*r", "sp ace", "🙂", "ü", " ", "\t",
            "a$.b", "x' OR '1'='1", "nul\x00", "bell\x07", "cr\r\nlf", "\x1f", "\x7f", "back\\\"slash"]
    for key in keys:
        want = json.dumps(key, ensure_ascii=False)[1:-1]
        # json.dumps writes \u001f with lower-case hex; JSON accepts either case (RFC 8259 7)
        got = _escape_like_path_step(key, table)
        assert got.replace("''", "'").lower() == want.lower(), (key, got, want)
        # inside the SQL text literal: no lone quote can end it
        assert "'" not in got.replace("''", ""), key
    # the package spec documents the rule instead of the old allow-list
    assert "[[:alnum:]] _ space" not in src("oramem_filter.pks")


# S7: numbers NUMBER cannot hold (1e300 overflows, -1e-300 would round to 0) are bound as
# their JSON text and read as BINARY_DOUBLE by JSON_VALUE in the PASSING clause; only
# numbers inside NUMBER's range go through get_number.
def test_s7_out_of_range_numbers_compare_as_binary_double():
    body = src("oramem_filter.pkb")
    cmp_ = unit(body, "scalar_compare")
    number = branch(cmp_, "ELSIF in_elem.is_number THEN", "ELSIF in_elem.is_boolean")
    assert number.index("fits_number(") < number.index("get_number(0)"), "range check before get_number"
    assert "JSON_VALUE(:f' || l_n || ', ''$[0]'' RETURNING BINARY_DOUBLE" in number
    assert "l_arr.to_clob" in number
    fits = unit(body, "fits_number")
    assert "BETWEEN -129 AND 124" in fits, "NUMBER holds 1E-130 <= |x| < 1E126 (one decade of margin)"
    assert "TO_BINARY_DOUBLE" not in fits and "TO_NUMBER(l_txt" not in fits, "no NLS-dependent conversion"
    # the PASSING buffers hold the longer JSON_VALUE clause
    for name in ("scalar_leaf", "contains_one"):
        m = re.search(r"l_passing\s+VARCHAR2\((\d+) CHAR\)", unit(body, name))
        assert m and int(m.group(1)) >= len(' PASSING JSON_VALUE(:f9999, \'$[0]\' RETURNING BINARY_DOUBLE '
                                            'ERROR ON ERROR) AS "v9999"'), name


# S23: retrieval rows are inserted / re-vectored with one FORALL, timestamps are converted
# in PL/SQL, and the add batch is parsed once (the duplicate check reads a compact key list).
def _loops(body: str) -> list[str]:
    """The text of every FOR ... LOOP ... END LOOP of ``body`` (nested loops included)."""
    out, stack = [], []
    for m in re.finditer(r"\bFOR\s+\w+\s+IN\b[^;]*?\bLOOP\b|\bEND\s+LOOP\s*;", body):
        if m.group(0).upper().startswith("FOR"):
            stack.append(m.start())
        elif stack:
            out.append(body[stack.pop(): m.end()])
    return out


def test_s23_chunk_rows_are_inserted_with_one_forall_per_slice():
    text = src("oramem_store.pkb")
    assert not re.search(r"PROCEDURE\s+insert_chunks\b", text), "the row-by-row insert_chunks is gone"
    collect = unit(text, "collect_chunks")
    assert "EXECUTE IMMEDIATE" not in collect, "collect_chunks only validates and collects"
    flush = unit(text, "flush_chunks")
    assert len(re.findall(r"FORALL i IN 1 \.\. io_types\.COUNT\s+EXECUTE IMMEDIATE l_sql USING", flush)) == 2
    add = unit(text, "add_json")
    slice_loop = add[add.index("WHILE l_lo <= l_n LOOP"):]
    slice_loop = slice_loop[: slice_loop.index("l_lo := l_hi + 1;")]
    assert "collect_chunks(" in slice_loop and "flush_chunks(" in slice_loop
    for loop in _loops(add):
        if "EXECUTE IMMEDIATE" in loop:  # only the implicit-thread insert stays per row
            assert "l_thr_order" in loop, loop[:200]


def test_s23_the_add_batch_is_parsed_once():
    add = _code_without_comments(unit(src("oramem_store.pkb"), "add_json"))
    uses = re.findall(r"\bin_batch\b", add)
    assert len(uses) == 2 and "parse_object(in_batch, 'add batch')" in add  # the parameter and one parse
    assert "USING l_key_doc" in add and "JSON_TABLE(:1, ''$[*]''" in add
    assert "l_keys.append(l_pair);" in add


def test_s23_revector_updates_with_one_forall():
    body = unit(src("oramem_store.pkb"), "update_json")
    rev = branch(body, "WHEN 'revector' THEN", "WHEN 'strip_vectors' THEN")
    for loop in _loops(rev):
        assert "EXECUTE IMMEDIATE" not in loop, "no UPDATE per re-vectored row"
    assert re.search(r"FORALL i IN 1 \.\. l_c_vecs\.COUNT\s+EXECUTE IMMEDIATE l_upd\s+USING l_c_vecs\(i\), "
                     r"l_c_types\(i\), l_c_ids\(i\), l_c_nos\(i\);", rev)
    rep = branch(body, "WHEN 'replace' THEN", "WHEN 'revector' THEN")
    assert "flush_chunks(" in rep
    # fake40: the rows are collected (and checked) before the record is looked up
    pre = branch(body, "IF l_retrieval = 'replace' THEN", "' FOR UPDATE'")
    assert "collect_chunks(" in pre and "collect_chunks(" not in body[body.index("' FOR UPDATE'"):]


def test_s23_timestamps_are_converted_without_dynamic_sql():
    body = _code_without_comments(unit((REPO / "plsql" / "oramem_registry.pkb").read_text(), "parse_utc"))
    assert "EXECUTE IMMEDIATE" not in body and "FROM dual" not in body
    assert "l_ts := SYS_EXTRACT_UTC(TO_TIMESTAMP_TZ(l_main, 'YYYY-MM-DD\"T\"HH24:MI:SS.FFTZH:TZM'));" in body
    handler = body[body.index("WHEN OTHERS THEN"):]
    assert re.search(r"IF SQLCODE BETWEEN -1899 AND -1800 THEN\s+l_ts := NULL;\s+ELSE\s+RAISE;", handler), \
        "only datetime conversion errors mean 'not a valid time'; anything else is re-raised"


# S24: the record table has the indexes list() and list_thread_messages() need, and
# existing stores get them through the store schema version 2 upgrade.
def test_s24_list_indexes_and_the_schema_version_step():
    admin = src("oramem_admin.pkb")
    ensure = unit(admin, "ensure_objects")
    assert "FOR i IN 1 .. 7 LOOP" in ensure
    assert "WHEN 6 THEN 'record_type, seq_no'" in ensure
    assert "ELSE 'thread_id, record_type, seq_no' END" in ensure
    names = re.findall(r"'(_[A-Z]{3}_IX)'", ensure)
    assert len(names) == 7 and len(set(names)) == 7 and {"_TSQ_IX", "_TTS_IX"} <= set(names)
    assert "IF NOT index_exists(l_name) THEN" in ensure, "idempotent: an upgrade creates only what is missing"
    assert "1 -> 2 (S24)" in unit(admin, "build_store")
    m = re.search(r"gc_store_schema_version\s+CONSTANT\s+PLS_INTEGER\s*:=\s*(\d+)", src("oramem_registry.pks"))
    assert m and int(m.group(1)) >= 2  # 3 since issue 11 item 5 (keyword_language)
    readme = (REPO / "ddl" / "README.md").read_text()
    assert f"(currently {m.group(1)})" in readme and "**1 -> 2** (review S24)" in readme
    # the query shapes the indexes serve
    store = src("oramem_store.pkb")
    assert "r.record_type = :rt" in unit(store, "list_json") and "ORDER BY r.seq_no DESC" in unit(store, "list_json")
    msgs = unit(store, "list_thread_messages_json")
    assert "r.record_type = ''message'' AND r.thread_id = :1" in msgs and "ORDER BY r.seq_no DESC" in msgs


# last_error is VARCHAR2(2000 CHAR), which still holds at most 4000 bytes: the text written
# into it is cut in characters and then in bytes (SUBSTRB), never in characters only.
def test_last_error_is_cut_in_bytes():
    catalog = (REPO / "ddl" / "001_catalog.sql").read_text()
    assert re.search(r"last_error\s+VARCHAR2\(2000 CHAR\)", catalog)
    body = unit(src("oramem_admin.pkb"), "set_state")
    assert "last_error  = SUBSTRB(SUBSTR(in_last_error, 1, 2000), 1, 4000)," in body
    assert not re.search(r"last_error\s*=\s*SUBSTR\(", body)
