"""left36 item 2, the PL/SQL text: ``oramem_store.list_json`` refuses a scope on an unscoped
type (user_profile, agent_profile, thread) with -20001 before anything is read, instead of
reading the raw columns (which answered [] for Bob's profiles and disagreed with SC-3.3). The
rule over both engines and Bob's request: tests/oracle/test_left36_profile_listing.py.
Static-checked, not run against Oracle."""

from __future__ import annotations

import re

from oramem.types import SCOPED_TYPES

from .test_round3_findings import code
from .test_store_findings import unit


def test_list_json_refuses_a_scope_on_an_unscoped_type_before_anything_is_read():
    body = unit(code("oramem_store.pkb"), "list_json")
    refusal = re.search(r"IF\s+l_cond\s+IS\s+NOT\s+NULL\s+AND\s+NOT\s+oramem_registry\.is_scoped_type\(l_type\)\s+"
                        r"THEN\s+bad_argument\(", body)
    assert refusal, "a scope on an unscoped type is -20001"
    assert refusal.start() > body.index("oramem_filter.scope_condition(l_dim"), "after the scope's own checks"
    assert refusal.start() < body.index("l_rwhere := l_rwhere || ' AND ' || l_cond;")
    assert refusal.start() < body.index("oramem_filter.query_clob(l_sql, l_binds)")
    assert body.index("l_type := oramem_registry.check_record_type(") < body.index("FOR d IN 1 .. 3 LOOP")


def test_the_unscoped_types_are_the_pythons_and_the_fakes():
    from oracle.plsql_standin import StoreStandIn  # tests/ is on sys.path (rootdir conftest)

    scoped = re.search(r"RETURN\s+in_record_type\s+IN\s+\(([^)]*)\)",
                       unit(code("oramem_registry.pkb"), "is_scoped_type")).group(1)
    assert set(re.findall(r"'(\w+)'", scoped)) == set(SCOPED_TYPES) == StoreStandIn.SCOPED_TYPES
