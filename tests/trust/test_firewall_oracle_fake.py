"""The firewall and store options on the Oracle engine, over the recording fake of
python-oracledb (static-checked, not run against Oracle): the policy is one option row
(oramem_admin.set_option / get_options_json), read once per store object, and an add sends
the redacted text with its verdict, the rejected text never."""

from __future__ import annotations

import asyncio
import json

import pytest

from oracle.fakes import FakeAsyncPool, FakePool, Recorder
from oracle.test_driver_fake import SETTINGS_OUT
from oramem import OracleDBMemoryStore, SchemaPolicy
from oramem.embedders import HashEmbedder
from oramem.trust import VERDICT_KEY, FirewallPolicy, FirewallRejected

OPENAI = "sk-" + "proj-" + "aB3dE5gH7jK9mN1pQ2rS4tU6vW8xY0z"


def _recorder(options: dict) -> Recorder:
    return Recorder({
        "oramem_admin.open_store": json.dumps(dict(SETTINGS_OUT, vector_dim=8)),
        "oramem_admin.get_options_json": json.dumps(options),
        "oramem_store.add_json": json.dumps(["a"]),
    })


def test_set_firewall_is_one_option_call_with_the_policy_json():
    rec = _recorder({})
    store = OracleDBMemoryStore(HashEmbedder(8), FakePool(rec), schema_policy=SchemaPolicy.CREATE_IF_NECESSARY,
                                memory_store_id="mystore")
    store.set_firewall(FirewallPolicy(secret="reject", trust={"web": "low"}))
    [call] = [c for c in rec.plsql if c.name == "oramem_admin.set_option"]
    assert call.kind == "callproc" and call.binds["in_name"] == "firewall"
    assert json.loads(call.binds["in_value"]) == FirewallPolicy(secret="reject", trust={"web": "low"}).to_json()
    assert call.binds["in_store_id"] == "MYSTORE"
    assert rec.of("commit")  # the driver commits the option write
    store.set_option("audit", None)
    assert [c for c in rec.plsql if c.name == "oramem_admin.set_option"][-1].binds["in_value"] is None


def test_add_sends_the_redacted_text_and_the_verdict_and_rejects_before_any_call():
    rec = _recorder({"firewall": FirewallPolicy(secret="redact").to_json()})
    store = OracleDBMemoryStore(HashEmbedder(8), FakePool(rec), memory_store_id="mystore")
    store.add([f"key {OPENAI}"], "memory", record_ids="a")
    [add] = [c for c in rec.plsql if c.name == "oramem_store.add_json"]
    batch = add.binds["in_batch"]
    text = batch if isinstance(batch, str) else batch.read()
    assert OPENAI not in text and "[REDACTED:secret.openai_key]" in text
    record = json.loads(text)["records"][0] if isinstance(json.loads(text), dict) else json.loads(text)[0]
    assert record["metadata"][VERDICT_KEY]["verdict"] == "redacted"
    # the policy was read once, by this store object
    assert [c.name for c in rec.plsql].count("oramem_admin.get_options_json") == 1
    store.add(["plain"], "memory", record_ids="a")
    assert [c.name for c in rec.plsql].count("oramem_admin.get_options_json") == 1

    rec2 = _recorder({"firewall": FirewallPolicy(secret="reject").to_json()})
    store2 = OracleDBMemoryStore(HashEmbedder(8), FakePool(rec2), memory_store_id="mystore")
    with pytest.raises(FirewallRejected):
        store2.add([f"key {OPENAI}"], "memory")
    assert "oramem_store.add_json" not in [c.name for c in rec2.plsql]


def test_async_store_reads_options_through_the_async_driver():
    rec = _recorder({"firewall": FirewallPolicy(secret="reject").to_json()})

    async def go():
        store = await OracleDBMemoryStore.connect_async(HashEmbedder(8), FakeAsyncPool(rec), memory_store_id="mystore")
        with pytest.raises(FirewallRejected):
            await store.add_async([f"key {OPENAI}"], "memory")
        with pytest.raises(TypeError, match="_async"):
            store.get_firewall()
        return await store.get_firewall_async()

    assert asyncio.run(go()) == FirewallPolicy(secret="reject")
