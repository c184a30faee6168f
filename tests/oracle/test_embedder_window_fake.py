"""Issue 28 item 2: an in-database embedding model's window. OracleDBEmbedder sends each text
through a VARCHAR2(4000) column and clips longer text, so it reports a window the store
chunks to: at most 1,000 characters (4 bytes each at worst), and 2 characters per token of
a configured model window. No chunk the store makes for it is clipped."""

from __future__ import annotations

import pytest

from oramem.chunking import policy_for
from oramem.embedders.base import input_window
from oramem.oracle.embedder import OracleDBEmbedder

from .fakes import FakePool, Recorder


def _emb(**kw):
    return OracleDBEmbedder(FakePool(Recorder()), "ORAMEM_EMBED", embedding_dimension=8, **kw)


def test_window_bounds_the_bytes_one_call_takes():
    window = input_window(_emb())
    assert window is not None and window.max_chars == 1000 and window.max_tokens is None
    window = input_window(_emb(max_input_tokens=256))
    assert window.max_tokens == 256 and window.max_chars == 512


@pytest.mark.parametrize("bad", [0, 4, True, 2.5, "256"])
def test_bad_window_is_refused(bad):
    with pytest.raises(ValueError, match="max_input_tokens"):
        _emb(max_input_tokens=bad)


def test_no_chunk_of_a_long_multibyte_text_is_clipped():
    text = " ".join(["東京の住所は渋谷区です。"] * 400 + ["The passport is in the blue drawer."])
    chunks = policy_for(input_window(_emb())).split(text)
    assert len(chunks) > 1
    assert all(len(c.encode("utf-8")) <= 4000 for c in chunks)
    assert any("blue drawer" in c for c in chunks)
