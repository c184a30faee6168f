"""HashEmbedder: determinism, shape/dtype/norm, lexical similarity, empty text, speed-free checks."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from oramem.embedders import HashEmbedder, IEmbedder


def cos(a: np.ndarray, b: np.ndarray) -> float:
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def test_is_an_iembedder_with_its_dimension():
    e = HashEmbedder(64)
    assert isinstance(e, IEmbedder)
    assert e.embedding_dimension == 64
    assert HashEmbedder().embedding_dimension == 256


def test_shape_dtype_and_unit_norm():
    e = HashEmbedder(128)
    m = e.embed(["hello world", "the quick brown fox jumps over the lazy dog", "x"])
    assert m.shape == (3, 128)
    assert m.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(m, axis=1), 1.0, rtol=1e-5)


def test_empty_list_gives_empty_matrix():
    m = HashEmbedder(32).embed([])
    assert m.shape == (0, 32)
    assert m.dtype == np.float32


def test_deterministic_across_instances_and_processes():
    texts = ["Oracle AI Database stores vectors", "déjà vu — naïve café"]
    here = HashEmbedder(256, seed=7).embed(texts)
    again = HashEmbedder(256, seed=7).embed(texts)
    np.testing.assert_array_equal(here, again)
    # A fresh interpreter has a different PYTHONHASHSEED; the vectors must not change.
    code = (
        "import sys, numpy as np; from oramem.embedders import HashEmbedder;"
        "m = HashEmbedder(256, seed=7).embed(%r); sys.stdout.write(m.tobytes().hex())" % (texts,)
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env={"PYTHONHASHSEED": "12345"}
    ).stdout
    np.testing.assert_array_equal(np.frombuffer(bytes.fromhex(out), dtype=np.float32).reshape(here.shape), here)


def test_seed_changes_the_hash_family():
    a = HashEmbedder(256, seed=0).embed(["memory for agents"])[0]
    b = HashEmbedder(256, seed=1).embed(["memory for agents"])[0]
    assert not np.allclose(a, b)


def test_case_and_punctuation_insensitive():
    e = HashEmbedder()
    a, b = e.embed(["Dark Roast, COFFEE!", "dark roast coffee"])
    np.testing.assert_allclose(a, b, atol=1e-6)


def test_shared_words_are_closer_than_unrelated_text():
    e = HashEmbedder()
    q, near, far = e.embed(
        ["which coffee does the user prefer", "the user prefers dark roast coffee", "deploy the kubernetes cluster"]
    )
    assert cos(q, near) > cos(q, far) + 0.2


def test_character_ngrams_relate_word_variants():
    e = HashEmbedder()
    base, variant, other = e.embed(["preference", "preferences", "kubernetes"])
    assert cos(base, variant) > 0.35
    assert cos(base, variant) > cos(base, other) + 0.3


def test_blank_texts_embed_as_one_fixed_unit_vector():
    e = HashEmbedder(64)
    m = e.embed(["", "   ", "?!", "real words here"])
    np.testing.assert_allclose(np.linalg.norm(m, axis=1), 1.0, rtol=1e-6)
    np.testing.assert_array_equal(m[0], m[1])
    np.testing.assert_array_equal(m[0], m[2])
    assert not np.isnan(m @ m.T).any()
    assert not np.allclose(m[0], m[3])


def test_is_query_does_not_change_vectors():
    e = HashEmbedder()
    np.testing.assert_array_equal(e.embed(["abc def"]), e.embed(["abc def"], is_query=True))


async def test_embed_async_matches_embed():
    e = HashEmbedder(32)
    np.testing.assert_array_equal(await e.embed_async(["a b c"]), e.embed(["a b c"]))


@pytest.mark.parametrize(
    "kwargs, exc",
    [({"dim": 1}, ValueError), ({"dim": "8"}, TypeError), ({"dim": True}, TypeError), ({"seed": -1}, ValueError)],
)
def test_bad_construction(kwargs, exc):
    with pytest.raises(exc):
        HashEmbedder(**kwargs)


def test_bad_inputs():
    e = HashEmbedder()
    with pytest.raises(TypeError, match="single string"):
        e.embed("not a list")
    with pytest.raises(TypeError, match=r"texts\[1\]"):
        e.embed(["ok", None])


def test_many_texts_batch_equals_one_by_one():
    e = HashEmbedder(128)
    texts = [f"note number {i} about topic {i % 7}" for i in range(200)]
    together = e.embed(texts)
    alone = np.vstack([e.embed([t]) for t in texts])
    np.testing.assert_allclose(together, alone, atol=1e-6)


def test_embed_arguments_are_checked_once_for_every_embedder():
    import pytest

    from oramem.embedders import HashEmbedder

    emb = HashEmbedder(16)
    with pytest.raises(TypeError, match="wrap it in a list"):
        emb.embed("one string")
    with pytest.raises(TypeError, match=r"texts\[1\] must be a str, got int"):
        emb.embed(["ok", 3])
