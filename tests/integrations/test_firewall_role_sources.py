"""One firewall policy rates one speaker the same whichever adapter wrote the turn (SC-15.4;
adp38, from trial33). LangChain's chat history stores the roles ``human``/``ai``, the OpenAI
Agents session ``user``/``assistant``; the firewall takes a record's source from its role, so
``trust={"user": "high"}`` rated Alice's LangChain turns ``unrated`` and her Agents turns
``high``. The firewall now reads LangChain's roles as the sources ``user``/``assistant``; the
stored role stays as written (the history round-trips unchanged). Checked on SQLite and on
Oracle over the recording fake (the firewall runs in Python for both; static-checked, not run
against Oracle), through the sync and the async calls."""

from __future__ import annotations

import json

import pytest

from integrations.extras import require_extra

require_extra("langchain_core", "langchain")
require_extra("agents", "openai-agents")

from langchain_core.messages import AIMessage, AIMessageChunk, HumanMessage  # noqa: E402

from oramem import SQLiteMemoryStore  # noqa: E402
from oramem.embedders.hashing import HashEmbedder  # noqa: E402
from oramem.integrations.langchain import OramemChatMessageHistory  # noqa: E402
from oramem.integrations.openai_agents import OramemSession  # noqa: E402
from oramem.trust import VERDICT_KEY, FirewallPolicy  # noqa: E402

POLICY = FirewallPolicy(trust={"user": "high", "assistant": "medium"}, default_trust="low")


class _Oracle:
    """Sync and async stores over the recording fake, whose store calls a stand-in answers
    (static-checked, not run against Oracle); the stored records are read from the stand-ins."""

    def __init__(self) -> None:
        from oracle.fakes import Recorder
        from oracle.plsql_standin import StoreStandIn, standin_store
        from oracle.test_driver_fake import SETTINGS_OUT

        self.sync, rec = standin_store()
        self.standins = [StoreStandIn(vector_dim=8)]
        arec = Recorder()
        arec.answers["oramem_admin.open_store"] = json.dumps(dict(SETTINGS_OUT, vector_dim=8))
        self.standins[0].install(rec.answers)
        self.standins.append(StoreStandIn(vector_dim=8))
        self.standins[1].install(arec.answers)
        for r in (rec, arec):
            r.answers["oramem_admin.get_options_json"] = json.dumps({"firewall": POLICY.to_json()})
        self.arec = arec
        self.async_store = None

    async def open_async(self):
        from oramem import OracleDBMemoryStore
        from oracle.fakes import FakeAsyncPool

        self.async_store = await OracleDBMemoryStore.connect_async(HashEmbedder(8), FakeAsyncPool(self.arec),
                                                                   memory_store_id="mystore")
        return self.async_store

    def rated(self, thread_id):
        recs = sorted((r for st in self.standins for r in st.records.values() if r["thread_id"] == thread_id),
                      key=lambda r: r["seq_no"])
        return [(r["role"], r["metadata"][VERDICT_KEY]["source"], r["metadata"][VERDICT_KEY]["trust"]) for r in recs]


class _SQLite:
    def __init__(self, path) -> None:
        self.sync = SQLiteMemoryStore(str(path), embedder=HashEmbedder(8), schema_policy="create_if_necessary")
        self.sync.set_firewall(POLICY)
        self.async_store = None

    async def open_async(self):
        self.async_store = self.sync  # the SQLite store serves both colours
        return self.sync

    def rated(self, thread_id):
        return [(m.role, m.metadata[VERDICT_KEY]["source"], m.metadata[VERDICT_KEY]["trust"])
                for m in self.sync.list_thread_messages(thread_id)]


@pytest.fixture(params=["sqlite", "oracle-fake"])
def stores(request, tmp_path):
    both = _SQLite(tmp_path / "fw.db") if request.param == "sqlite" else _Oracle()
    yield both
    both.sync.close()


async def test_the_same_speaker_gets_the_same_trust_from_both_adapters(stores):
    OramemChatMessageHistory(stores.sync, "lc", user_id="alice").add_messages(
        [HumanMessage("I like tea"), AIMessage("noted")])
    astore = await stores.open_async()
    try:
        lc = OramemChatMessageHistory(astore, "lc2", user_id="alice")
        await lc.aadd_messages([HumanMessage("and green tea"), AIMessageChunk(content="noted too")])
        session = OramemSession("oa", astore, user_id="alice")
        await session.add_items([{"role": "user", "content": "I like tea"},
                                 {"role": "assistant", "content": "noted"}])

        assert stores.rated("lc") == [("human", "user", "high"), ("ai", "assistant", "medium")]
        assert stores.rated("lc2") == [("human", "user", "high"), ("AIMessageChunk", "assistant", "medium")]
        assert stores.rated("oa") == [("user", "user", "high"), ("assistant", "assistant", "medium")]
        # the history round-trips as written
        assert [(type(m).__name__, m.content) for m in await lc.aget_messages()] == [
            ("HumanMessage", "and green tea"), ("AIMessageChunk", "noted too")]
    finally:
        if astore is not stores.sync:
            await astore.close_async()


def test_only_the_role_is_mapped_a_metadata_source_is_the_writers_label(stores):
    """A writer's metadata ``source`` is its own label, taken as written (a policy can still
    rate a source called ``human``); a role without an alias is its own source."""
    stores.sync.add(["from a form", "a system note", "a plain add"], "message", thread_ids="t", user_ids="alice",
                    roles=["human", "system", None], metadata=[{"source": "human"}, None, None])
    assert stores.rated("t") == [("human", "human", "low"), ("system", "system", "low"), (None, "api", "low")]
