"""Checks of the third review's findings (reviews/round3/oracle-store.md N*, oracle-search-admin-
driver.md D*) that only a live database can show. Skipped, with the reason printed, when no
Oracle database is available (conftest.py). Not run here: static-checked, not run against Oracle."""

from __future__ import annotations

import numpy as np
import pytest

from oramem import SchemaPolicy, SearchStrategy
from oramem.requests import AddRequest, StoreSettings

from .test_review_findings_oracle import _records, _search

pytestmark = pytest.mark.oracle


@pytest.mark.parametrize("sync", ["manual", "on_commit"])
def test_d4_keyword_store_sync_modes(pool, store_id, sync):
    """D4: a keyword store's CONTEXT index honours on_commit (found at once after the commit)
    and manual (found only after sync_search_index)."""
    from oramem.oracle import SyncOracleEngine

    engine = SyncOracleEngine(pool)
    engine.open(StoreSettings(store_id, 8, SearchStrategy.KEYWORD, sync, None), SchemaPolicy.CREATE_IF_NECESSARY)
    engine.add(AddRequest(_records(3, 8, np.random.default_rng(2), text="zebra crossing"), 256))
    keyword = _search(SearchStrategy.KEYWORD, 3, text="zebra")
    if sync == "manual":
        assert engine.search(keyword) == []
        engine.sync_search_index()
    assert len(engine.search(keyword)) == 3
