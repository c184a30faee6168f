"""ora44 (Oracle parity of red40's reembed fix), as text: a store object opened before
another session's reembed wrote and searched with its old embedder, since only
``open_store`` compared embedders. ``add_json``, ``update_json`` and ``search_json`` now read
an optional ``"embedder"`` member (the identity that made the request's vectors) and, before
anything is read or written, call ``oramem_admin.check_embedder``, which raises -20108 when
the store records another identity (``same_embedder``, the rule ``open_store`` uses). The
driver's side and the recording fake are ``tests/oracle/test_ora44_reembed_fake.py``.
Static-checked, not run against Oracle."""

from __future__ import annotations

import re

from .test_round3_findings import code
from .test_store_findings import unit


def _flat(text: str) -> str:
    return re.sub(r"\s+", " ", text)


def test_check_embedder_refuses_another_recorded_identity_only():
    spec = _flat(code("oramem_admin.pks"))
    assert ("PROCEDURE check_embedder( in_store_id IN VARCHAR2, in_identity IN CLOB, in_what IN VARCHAR2 );"
            in spec)
    body = _flat(unit(code("oramem_admin.pkb"), "check_embedder"))
    assert "l_id VARCHAR2(128 CHAR) := oramem_registry.normalize_store_id(in_store_id);" in body
    assert ("SELECT s.embedder INTO l_recorded FROM oramem_stores s WHERE s.memory_store_id = l_id; "
            "EXCEPTION WHEN NO_DATA_FOUND THEN oramem_errors.raise_error(oramem_errors.gc_store_not_found," in body)
    nothing = body.index("IF l_recorded IS NULL THEN RETURN;")
    same = body.index("IF same_embedder(l_recorded, in_identity) THEN RETURN;")
    refusal = body.index("oramem_errors.raise_error(oramem_errors.gc_embedder_mismatch,")
    assert nothing < same < refusal
    assert "in_what" in body[refusal:]


def test_the_store_helper_reads_the_member_as_the_open_reads_its_embedder():
    helper = _flat(unit(code("oramem_store.pkb"), "check_embedder"))
    assert "IF in_embedder IS NULL THEN RETURN;" in helper and "IF in_embedder.is_null THEN RETURN;" in helper
    assert re.search(r"IF NOT in_embedder\.is_object THEN oramem_errors\.raise_error\(oramem_errors\.gc_invalid_payload",
                     helper)
    assert "oramem_admin.check_embedder(in_store.memory_store_id, in_embedder.to_clob, in_what);" in helper


def _before_any_statement(body: str, check: str) -> None:
    at = body.index(check)
    first = min(i for i in (body.find("EXECUTE IMMEDIATE"), body.find("OPEN l_"), body.find("SELECT ")) if i >= 0)
    assert at < first, "the embedder is checked before anything is read or written"


def test_add_and_update_check_before_anything_is_written():
    for name, obj in (("add_json", "l_doc"), ("update_json", "l_req")):
        body = _flat(unit(code("oramem_store.pkb"), name))
        check = f"IF {obj}.has('embedder') THEN check_embedder(l_store, {obj}.get('embedder'),"
        assert check + f" '{'add batch' if name == 'add_json' else 'update request'}', 'nothing was written');" in body
        _before_any_statement(body, check)


def test_search_checks_before_anything_is_read():
    body = _flat(unit(code("oramem_search.pkb"), "search_json"))
    check = "oramem_admin.check_embedder(l_store.memory_store_id, l_req.get_object('embedder').to_clob, 'nothing was searched');"
    assert check in body
    guard = body.index("IF l_req.has('embedder') THEN IF NOT l_req.get('embedder').is_null THEN")
    assert guard < body.index(check)
    _before_any_statement(body, check)
