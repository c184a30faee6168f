"""``oramem db selftest`` as an Oracle-marked pytest module: the same checks on the test
database (ORACLE_DSN or docker/compose.yml, see oracle_env.py); skipped with the printed
reason when no database is available. ``ORAMEM_TEST_MODEL`` names an in-database ONNX
model to include the HYBRID checks (otherwise they are SKIP lines, not failures)."""

from __future__ import annotations

import os

import pytest

from oramem.cli import selftest as st

pytestmark = pytest.mark.oracle

GROUPS = ("vector:", "keyword:", "hybrid:", "oramem_", "cleanup:")


@pytest.fixture(scope="module")
def results(oracle_params):
    import oracledb

    dsn, user, password = oracle_params
    conn = oracledb.connect(user=user, password=password, dsn=dsn)
    conn.call_timeout = 300_000
    try:
        out = st.run_selftest(conn, model=os.environ.get("ORAMEM_TEST_MODEL") or None,
                              echo=lambda r: print(st.format_result(r)))
    finally:
        conn.close()
    return out


@pytest.mark.parametrize("group", GROUPS)
def test_selftest_group(results, group):
    mine = [r for r in results if r.name.startswith(group)]
    if mine and all(r.status == "SKIP" for r in mine):
        pytest.skip("; ".join(f"{r.name}: {r.detail}" for r in mine[:3]))
    failed = [st.format_result(r) for r in mine if r.status == "FAIL"]
    assert not failed, "\n".join(failed)


def test_selftest_explain_plan_uses_hnsw(results):
    plan = [r for r in results if "EXPLAIN PLAN" in r.name]
    assert plan, "no EXPLAIN PLAN check ran (no vector store opened?)"
    assert all(r.status == "PASS" for r in plan), "\n".join(st.format_result(r) for r in plan)


def test_selftest_exit_code(results):
    assert st.exit_code(results) == 0, st.format_results([r for r in results if r.status == "FAIL"])
