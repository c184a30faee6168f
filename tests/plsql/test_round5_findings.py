"""PL/SQL text tests for the red-team round of 2026-12-06 j (helper red16): the Oracle twins of
the user boundaries. Each test fails on the text before its fix. Static-checked, not run
against Oracle."""

from __future__ import annotations

import re

from oramem.oracle.codec import _scope
from oramem.requests import Scope, ScopeMatch

from .test_round3_findings import code
from .test_store_findings import unit


def test_a_scope_value_with_a_match_other_than_equals_is_refused_not_read_as_any():
    """SC-6.2 / SC-3.3 on the PL/SQL API: ``scope_condition`` (list_json and search_json)
    took ``{"user": {"value": "bob"}}`` (no match), ``{"match": null, ...}`` or ``{"match":
    "any", "value": "bob"}`` as no user condition at all, so a PL/SQL caller acting for Bob
    listed and searched every user's records (fail open, the shape red13's fix left: the
    value was a string, the match null or a string). A value now goes with ``equals`` only;
    any other match with a value is -20002, checked before the ``any`` early return."""
    body = unit(code("oramem_filter.pkb"), "scope_condition")
    check = re.search(r"IF\s+in_value\s+IS\s+NOT\s+NULL\s+AND\s+NVL\(l_match,\s*'any'\)\s*<>\s*'equals'\s+THEN(.*?)END\s+IF\s*;",
                      body, re.S)
    assert check, "a value with a match other than equals must be checked"
    assert "oramem_errors.gc_invalid_payload" in check.group(1)
    early = re.search(r"IF\s+l_match\s+IS\s+NULL\s+OR\s+l_match\s*=\s*'any'\s+THEN\s+RETURN\s+NULL\s*;", body)
    assert early and check.start() < early.start(), "the check must come before 'any' returns no condition"
    # an unknown match is still named as such (checked first, without the value)
    unknown = re.search(r"IF\s+l_match\s+IS\s+NOT\s+NULL\s+AND\s+l_match\s+NOT\s+IN\s+\('any',\s*'equals',\s*'is_null'\)", body)
    assert unknown and unknown.start() < check.start()


def test_the_python_driver_sends_a_scope_value_with_equals_only():
    """What the refusal above must never refuse: the driver's own scopes (``codec._scope``)."""
    assert _scope(Scope(ScopeMatch.EQUALS, "bob")) == {"match": "equals", "value": "bob"}
    for match in (ScopeMatch.ANY, ScopeMatch.IS_NULL):
        assert "value" not in _scope(Scope(match, None))
