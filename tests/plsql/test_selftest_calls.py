"""The PL/SQL calls of ``oramem db selftest`` (oramem.cli.selftest.SELFTEST_CALLS) name
real package subprograms with real parameter names and types, like the driver's calls."""

from __future__ import annotations

from oramem.oracle.calls import check_calls_against
from oramem.cli.selftest import SELFTEST_CALLS

from .test_static_gate import _packages


def test_selftest_calls_match_the_specs():
    specs, _ = _packages()
    problems = check_calls_against(SELFTEST_CALLS.values(), specs)
    assert not problems, "\n".join(problems)


def test_selftest_calls_every_public_store_and_search_entry_point():
    """Every public subprogram of oramem_admin / oramem_store / oramem_search is called by
    the self-test, directly or through the driver (oramem.oracle.driver.CALLS)."""
    from oramem.oracle.driver import ALL_CALLS

    specs, _ = _packages()
    called = {c.qualified_name.upper() for c in (*SELFTEST_CALLS.values(), *ALL_CALLS)}
    declared = {f"{pkg}.{sub.name}" for pkg in ("ORAMEM_ADMIN", "ORAMEM_STORE", "ORAMEM_SEARCH")
                for sub in specs[pkg].subprograms}
    assert len(declared) > 15 and declared - called == set()
