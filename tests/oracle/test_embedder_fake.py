"""OracleDBEmbedder against the recording fake (no database)."""

from __future__ import annotations

import array
import asyncio
import json

import numpy as np
import pytest

from oramem.oracle import OracleDBEmbedder
from oramem.oracle.embedder import validate_model_name

from .fakes import FakeAsyncPool, FakeConnection, FakePool, Recorder


def answers(dim=3, exists=1):
    def embed(call):
        texts = json.loads(call.binds["texts"])
        return [(array.array("f", [float(len(t))] + [0.0] * (dim - 1)),) for t in texts]

    return {"sql:from all_mining_models": [(exists,)], "sql:vector_dimension_count": [(dim,)],
            "sql:json_table(:texts": embed}


@pytest.mark.parametrize("bad", ["", "1abc", "a-b", 'x"y', "a.b.c", "m; drop table t", "a" * 129])
def test_model_name_is_validated_before_any_call(bad):
    rec = Recorder()
    with pytest.raises(ValueError, match="model_name"):
        OracleDBEmbedder(FakePool(rec), bad)
    assert rec.calls == []


def test_model_name_type_and_source_type():
    with pytest.raises(TypeError):
        validate_model_name(5)
    with pytest.raises(TypeError, match="connection or pool"):
        OracleDBEmbedder(object(), "M")
    assert validate_model_name("app.oramem_embed") == "APP.ORAMEM_EMBED"


def test_embed_binds_texts_and_quotes_the_model():
    rec = Recorder(answers())
    emb = OracleDBEmbedder(FakePool(rec), "app.Embed_1")
    out = emb.embed(["hi", "hello"])
    assert out.dtype == np.float32 and out.shape == (2, 3) and out[:, 0].tolist() == [2.0, 5.0]
    exists, dim, run = rec.of("execute")
    assert exists.binds == {"owner": "APP", "name": "EMBED_1"}
    assert 'vector_embedding("APP"."EMBED_1" using' in dim.name
    assert 'vector_embedding("APP"."EMBED_1" using jt.t as data)' in run.name
    assert json.loads(run.binds["texts"]) == ["hi", "hello"]
    assert emb.embedding_dimension == 3


def test_missing_model_says_what_to_do():
    rec = Recorder(answers(exists=0))
    emb = OracleDBEmbedder(FakeConnection(rec), "NOPE")
    with pytest.raises(ValueError, match="LOAD_ONNX_MODEL"):
        emb.embed(["x"])


def test_given_dimension_skips_the_probe_and_long_texts_are_clipped():
    rec = Recorder(answers(dim=4))
    emb = OracleDBEmbedder(FakeConnection(rec), "M", embedding_dimension=4)
    emb.embed(["é" * 3000])
    sqls = [c.name for c in rec.of("execute")]
    assert not any("vector_dimension_count" in s for s in sqls)
    sent = json.loads(rec.of("execute")[-1].binds["texts"])[0]
    assert len(sent.encode("utf-8")) == 4000
    with pytest.raises(TypeError, match="sequence of str"):
        emb.embed("not a list")


def test_async_embedder_is_native_and_sync_use_is_a_type_error():
    rec = Recorder(answers())
    emb = OracleDBEmbedder(FakeAsyncPool(rec), "M")
    with pytest.raises(TypeError, match="verify_async"):
        _ = emb.embedding_dimension
    with pytest.raises(TypeError, match="embed_async"):
        emb.embed(["x"])
    out = asyncio.run(emb.embed_async(["abc"]))
    assert out.shape == (1, 3) and emb.embedding_dimension == 3
    assert asyncio.run(emb.embed_async([])).shape == (0, 3)
