"""ONNXEmbedder speed machinery (issue 26 item 3): length-sorted batching, thread defaults and
the query cache — correctness, bounds and identity keying, never timings (bench/semantic.py)."""

from __future__ import annotations

import numpy as np
import pytest

for _mod, _why in (("onnxruntime", "ONNX Runtime"), ("tokenizers", "tokenizers"), ("onnx", "the onnx builder")):
    pytest.importorskip(_mod, reason=f"{_why} not installed: pip install '.[test]'")

from oramem.embedders import ONNXEmbedder  # noqa: E402
from oramem.embedders.onnx import physical_cores  # noqa: E402

from .onnx_models import build_model_dir, expected  # noqa: E402

# lengths deliberately out of order, so sorting by length reorders them inside the call
TEXTS = ["hello hello hello world world blue", "car", "peanut allergy red", "blue", "hello world", "I drive a red car"]


@pytest.mark.parametrize("batch_size", [1, 2, 4, 64])
@pytest.mark.parametrize("pooling", ["mean", "cls", "max"])
def test_length_sorted_batches_return_vectors_in_caller_order(tmp_path, batch_size, pooling):
    emb = ONNXEmbedder(build_model_dir(tmp_path / "m", pooling=pooling), batch_size=batch_size)
    got = emb.embed(TEXTS)
    np.testing.assert_allclose(got, expected(TEXTS, pooling=pooling), rtol=1e-5, atol=1e-6)
    # each text alone (no padding at all) gives the same vector as inside a mixed batch
    alone = np.stack([emb.embed([t])[0] for t in TEXTS])
    np.testing.assert_allclose(got, alone, rtol=1e-5, atol=1e-6)


def test_threads_default_to_physical_cores_and_env_knob(tmp_path, monkeypatch):
    path = build_model_dir(tmp_path / "m")
    monkeypatch.delenv("ORAMEM_ONNX_THREADS", raising=False)
    assert ONNXEmbedder(path).intra_op_threads == physical_cores() >= 1
    monkeypatch.setenv("ORAMEM_ONNX_THREADS", "1")
    assert ONNXEmbedder(path).intra_op_threads == 1
    assert ONNXEmbedder(path, intra_op_threads=2).intra_op_threads == 2  # the argument wins
    monkeypatch.setenv("ORAMEM_ONNX_THREADS", "many")
    with pytest.raises(ValueError, match="ORAMEM_ONNX_THREADS"):
        ONNXEmbedder(path)


def test_query_cache_hits_are_correct_copies(tmp_path):
    emb = ONNXEmbedder(build_model_dir(tmp_path / "m"))
    first = emb.embed(["red car"], is_query=True)
    assert list(emb._query_cache) == ["red car"]
    first[0, :] = 99.0  # the caller scribbles on its result
    again = emb.embed(["red car"], is_query=True)
    np.testing.assert_allclose(again, expected(["red car"]), rtol=1e-5, atol=1e-6)
    again[0, :] = 7.0
    # mixed hit and miss in one call, in the caller's order
    mixed = emb.embed(["blue", "red car", "hello world"], is_query=True)
    np.testing.assert_allclose(mixed, expected(["blue", "red car", "hello world"]), rtol=1e-5, atol=1e-6)
    # passages are never cached
    emb.embed(["peanut allergy"])
    assert "peanut allergy" not in emb._query_cache


def test_query_cache_is_bounded_lru_and_can_be_off(tmp_path):
    path = build_model_dir(tmp_path / "m")
    emb = ONNXEmbedder(path, query_cache_size=2)
    emb.embed(["blue"], is_query=True)
    emb.embed(["car"], is_query=True)
    emb.embed(["blue"], is_query=True)  # touch: "car" is now the oldest
    emb.embed(["red"], is_query=True)
    assert list(emb._query_cache) == ["blue", "red"]
    emb.embed(["a", "b", "c"], is_query=True)
    assert len(emb._query_cache) == 2
    emb.clear_query_cache()
    assert not emb._query_cache
    off = ONNXEmbedder(path, query_cache_size=0)
    off.embed(["blue"], is_query=True)
    assert not off._query_cache
    for bad in (-1, True, 1.5):
        with pytest.raises(ValueError, match="query_cache_size"):
            ONNXEmbedder(path, query_cache_size=bad)


def test_query_cache_is_keyed_by_prefixed_text_and_never_shared(tmp_path):
    plain = ONNXEmbedder(build_model_dir(tmp_path / "m"))
    cls = ONNXEmbedder(build_model_dir(tmp_path / "c", pooling="cls"))
    prefixed = ONNXEmbedder(build_model_dir(tmp_path / "p"), query_prefix="blue ")
    v_plain = plain.embed(["car"], is_query=True)
    v_cls = cls.embed(["car"], is_query=True)
    v_pref = prefixed.embed(["car"], is_query=True)
    np.testing.assert_allclose(v_cls, expected(["car"], pooling="cls"), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(v_pref, expected(["blue car"]), rtol=1e-5, atol=1e-6)
    assert not np.allclose(v_plain, v_pref)
    # a second call on each still answers with its own model's vector
    np.testing.assert_allclose(plain.embed(["car"], is_query=True), expected(["car"]), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(cls.embed(["car"], is_query=True), v_cls, rtol=0, atol=0)
    assert list(prefixed._query_cache) == ["blue car"]
