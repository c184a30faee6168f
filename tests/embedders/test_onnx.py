"""ONNXEmbedder on tiny models the tests build (tests/embedders/onnx_models.py)."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

for _mod, _why in (("onnxruntime", "ONNX Runtime"), ("tokenizers", "tokenizers"), ("onnx", "the onnx builder")):
    pytest.importorskip(_mod, reason=f"{_why} not installed: pip install '.[test]'")

from oramem.embedders import ModelNotAvailable, ONNXEmbedder  # noqa: E402

from .onnx_models import AUGMENTED_WORDS, DIM, build_augmented_model, build_model_dir, expected  # noqa: E402

TEXTS = ["hello world", "peanut allergy", "I drive a red car", "blue", "hello hello hello world world unknownword"]


@pytest.mark.parametrize("pooling", ["mean", "cls", "max"])
def test_pooling_from_config_matches_numpy(tmp_path, pooling):
    emb = ONNXEmbedder(build_model_dir(tmp_path / "m", pooling=pooling))
    assert emb.pooling == pooling and emb.normalize is True
    assert emb.embedding_dimension == DIM
    got = emb.embed(TEXTS)
    assert got.dtype == np.float32 and got.shape == (len(TEXTS), DIM)
    np.testing.assert_allclose(got, expected(TEXTS, pooling=pooling), rtol=1e-5, atol=1e-6)


def test_normalisation_follows_modules_json_and_override(tmp_path):
    plain = ONNXEmbedder(build_model_dir(tmp_path / "m", normalize=False))
    assert plain.normalize is False
    np.testing.assert_allclose(plain.embed(TEXTS), expected(TEXTS, normalize=False), rtol=1e-5, atol=1e-6)
    forced = ONNXEmbedder(tmp_path / "m", normalize=True)
    np.testing.assert_allclose(np.linalg.norm(forced.embed(TEXTS), axis=1), 1.0, rtol=1e-6)


def test_defaults_without_pooling_config_are_mean_and_unit(tmp_path):
    emb = ONNXEmbedder(build_model_dir(tmp_path / "m", pooling=None, normalize=None, token_types=False))
    assert (emb.pooling, emb.normalize) == ("mean", True)
    np.testing.assert_allclose(emb.embed(TEXTS), expected(TEXTS), rtol=1e-5, atol=1e-6)


def test_unsupported_pooling_config_is_refused(tmp_path):
    with pytest.raises(ValueError, match="pooling sqrt is not supported|pass pooling"):
        ONNXEmbedder(build_model_dir(tmp_path / "m", pooling="sqrt"))
    assert ONNXEmbedder(tmp_path / "m", pooling="mean").pooling == "mean"


def test_batching_does_not_change_vectors(tmp_path):
    path = build_model_dir(tmp_path / "m")
    whole = ONNXEmbedder(path, batch_size=64).embed(TEXTS)
    small = ONNXEmbedder(path, batch_size=2, intra_op_threads=1, inter_op_threads=1).embed(TEXTS)
    np.testing.assert_allclose(small, whole, rtol=1e-6, atol=1e-7)


def test_truncation_to_max_length(tmp_path):
    emb = ONNXEmbedder(build_model_dir(tmp_path / "m"), max_length=2)
    # [CLS] + the first word only
    np.testing.assert_allclose(emb.embed(["hello world blue"]), expected(["hello"]), rtol=1e-5, atol=1e-6)


def test_prefixes_and_is_query(tmp_path):
    emb = ONNXEmbedder(build_model_dir(tmp_path / "m"), query_prefix="blue ", passage_prefix="")
    np.testing.assert_allclose(emb.embed(["car"], is_query=True), expected(["blue car"]), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(emb.embed(["car"]), expected(["car"]), rtol=1e-5, atol=1e-6)


def test_async_matches_sync(tmp_path):
    emb = ONNXEmbedder(build_model_dir(tmp_path / "m"))
    got = asyncio.run(emb.embed_async(TEXTS))
    np.testing.assert_allclose(got, emb.embed(TEXTS))


def test_empty_and_bad_input(tmp_path):
    emb = ONNXEmbedder(build_model_dir(tmp_path / "m"))
    assert emb.embed([]).shape == (0, DIM)
    with pytest.raises(TypeError, match="wrap it in a list"):
        emb.embed("hello")
    with pytest.raises(TypeError, match=r"texts\[1\]"):
        emb.embed(["a", 3])


def test_graph_that_pools_itself(tmp_path):
    emb = ONNXEmbedder(build_model_dir(tmp_path / "m", pooled=True))
    assert emb.pooling is None
    # the graph's own pooling is an unmasked mean: equal to ours when nothing is padded
    np.testing.assert_allclose(emb.embed(["hello world"]), expected(["hello world"]), rtol=1e-5, atol=1e-6)


def test_model_file_path_and_identity(tmp_path):
    path = build_model_dir(tmp_path / "mini")
    by_file = ONNXEmbedder(path / "model.onnx")
    by_dir = ONNXEmbedder(path)
    np.testing.assert_allclose(by_file.embed(TEXTS), by_dir.embed(TEXTS))
    ident = by_dir.embedder_identity
    assert ident["kind"] == "onnx" and ident["model"] == "mini" and ident["dimension"] == DIM
    assert ident["normalize"] is True and ident["pooling"] == "mean" and ident["digest"].startswith("sha256:")
    other = build_model_dir(tmp_path / "other", pooling="cls")
    assert ONNXEmbedder(other).embedder_identity != ident


def test_augmented_string_input_model(tmp_path):
    emb = ONNXEmbedder(build_augmented_model(tmp_path / "aug.onnx"))
    assert emb.augmented and emb.tokenizer is None and emb.normalize is False
    assert emb.embedding_dimension == 3
    got = emb.embed(["world", "hello", "something else"])
    np.testing.assert_allclose(got, [AUGMENTED_WORDS["world"], AUGMENTED_WORDS["hello"], [0, 0, 1]])
    unit = ONNXEmbedder(tmp_path / "aug.onnx", normalize=True).embed(["world"])
    np.testing.assert_allclose(unit, [[0.0, 0.6, 0.8]], rtol=1e-6)
    with pytest.raises(ValueError, match="pools inside its graph"):
        ONNXEmbedder(tmp_path / "aug.onnx", pooling="mean")


def test_missing_files_give_clear_errors(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(ModelNotAvailable, match="has no model.onnx"):
        ONNXEmbedder(tmp_path / "empty")
    path = build_model_dir(tmp_path / "m")
    (path / "tokenizer.json").unlink()
    with pytest.raises(ModelNotAvailable, match="tokenizer.json"):
        ONNXEmbedder(path)
    with pytest.raises(ModelNotAvailable, match="no model file or directory"):
        ONNXEmbedder(str(tmp_path / "nope" / "model.onnx"))
    (tmp_path / "junk.onnx").write_bytes(b"not a model")
    with pytest.raises(ValueError, match="cannot load"):
        ONNXEmbedder(tmp_path / "junk.onnx")
    with pytest.raises(ValueError, match="batch_size"):
        ONNXEmbedder(path, batch_size=0)
    with pytest.raises(ValueError, match="pooling must be one of"):
        ONNXEmbedder(path, pooling="sum")


def test_model_id_uses_cache_then_offline_error(tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    build_model_dir(cache / "acme--tiny-embed")
    emb = ONNXEmbedder("acme/tiny-embed", cache_dir=cache)
    assert emb.model_id == "acme/tiny-embed" and emb.embedder_identity["model"] == "acme/tiny-embed"
    monkeypatch.setenv("ORAMEM_MODEL_CACHE", str(cache))
    assert ONNXEmbedder("acme/tiny-embed").model_dir == (cache / "acme--tiny-embed").resolve()

    with pytest.raises(ModelNotAvailable, match="download=False"):
        ONNXEmbedder("acme/other", download=False)

    # fetching is oramem.embedders.hub's (tests/embedders/test_hub.py); offline it says so
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(ModelNotAvailable, match=r"acme/other is not in the model cache .*acme--other.*HF_HUB_OFFLINE"):
        ONNXEmbedder("acme/other")
    with pytest.raises(ValueError, match="neither an existing directory"):
        ONNXEmbedder("bad id!")


def test_store_round_trip_with_onnx_embedder(tmp_path):
    from oramem import SQLiteMemoryStore

    emb = ONNXEmbedder(build_model_dir(tmp_path / "m"))
    store = SQLiteMemoryStore(str(tmp_path / "s.db"), embedder=emb, schema_policy="CREATE_IF_NECESSARY")
    try:
        store.add(["peanut allergy", "I drive a red car"], "memory", user_ids="u")
        (record, _distance), = store.search("peanut", user_id="u", k=1, strategy="VECTOR")
        assert record.content == "peanut allergy"
    finally:
        store.close()
