"""The split driver (issue 24 item 5, architecture review refactor 2 and A32) over the recording
fake: a rollback that fails after a failed call is logged (it was `except oracledb.Error: pass`),
in both colours, and the call's own error still propagates. Static-checked, not run against
Oracle."""
from __future__ import annotations

import asyncio
import json
import logging

import pytest

from oramem.oracle import AsyncOracleEngine, SyncOracleEngine
from oramem.requests import AddRequest, NewRecord
from oramem.types import SchemaPolicy

from .fakes import FakeAsyncConnection, FakeConnection, Recorder, db_error
from .test_driver_fake import SETTINGS_OUT, settings


class _SyncBrokenRollback(FakeConnection):
    def rollback(self):
        super().rollback()
        raise db_error(3113, "end-of-file on communication channel")


class _AsyncBrokenRollback(FakeAsyncConnection):
    async def rollback(self):
        await super().rollback()
        raise db_error(3113, "end-of-file on communication channel")


def _request() -> AddRequest:
    rec = NewRecord(id="r1", record_type="memory", content="x", thread_id=None, user_id=None, agent_id=None,
                    role=None, timestamp=None, metadata=None, ttl=None, chunks=())
    return AddRequest(records=(rec,), batch_size=1)


@pytest.mark.parametrize("colour", ["sync", "async"])
def test_a_failed_rollback_after_a_failed_call_is_logged(colour, caplog):
    rec = Recorder({"oramem_admin.open_store": json.dumps(SETTINGS_OUT),
                    "oramem_store.add_json": db_error(1, "unique constraint violated")})
    if colour == "sync":
        engine = SyncOracleEngine(_SyncBrokenRollback(rec))
        engine.open(settings(), SchemaPolicy.CREATE_IF_NECESSARY)
        run = lambda: engine.add(_request())  # noqa: E731
    else:
        engine = AsyncOracleEngine(_AsyncBrokenRollback(rec))
        asyncio.run(engine.open_async(settings(), SchemaPolicy.CREATE_IF_NECESSARY))
        run = lambda: asyncio.run(engine.add_async(_request()))  # noqa: E731
    with caplog.at_level(logging.WARNING, logger="oramem.oracle"):
        with pytest.raises(ValueError, match="already exists") as raised:
            run()
    assert "ORA-00001" in str(raised.value)  # the call's error, not the rollback's
    assert [c.kind for c in rec.calls][-1] == "rollback"
    (entry,) = [r for r in caplog.records if "rolling back after a failed oramem_store.add_json failed" in r.message]
    assert "ORA-03113" in str(entry.exc_info[1])
