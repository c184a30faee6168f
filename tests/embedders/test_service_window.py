"""Issue 28 item 1 for OpenAI-compatible services: the embedder says how much text the model
reads (documented for OpenAI's models, configured for any other), and the store chunks a
long text so that no part lies past that window."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from oramem.chunking import policy_for
from oramem.embedders.base import input_window
from oramem.embedders.openai_compat import CHARS_PER_TOKEN, OpenAICompatibleEmbedder


def _emb(model="local-model", **kw):
    return OpenAICompatibleEmbedder(model, base_url="http://127.0.0.1:9/v1", dimension=8, **kw)


def test_known_openai_models_have_their_documented_window():
    window = input_window(_emb("text-embedding-3-small"))
    assert window is not None and window.max_tokens == 8192
    assert window.max_chars == 8192 * CHARS_PER_TOKEN


def test_an_unknown_model_has_no_window_until_configured():
    assert input_window(_emb()) is None
    assert policy_for(input_window(_emb())).unit == "chars"
    window = input_window(_emb(max_input_tokens=100))
    assert window is not None and window.max_tokens == 100 and window.max_chars == 100 * CHARS_PER_TOKEN


@pytest.mark.parametrize("bad", [0, 7, -1, True, 1.5, "512"])
def test_bad_window_is_refused(bad):
    with pytest.raises(ValueError, match="max_input_tokens"):
        _emb(max_input_tokens=bad)


def test_store_chunks_fit_a_configured_window():
    """A 512-token local model configured as 100 tokens: every chunk the store makes of a long
    text fits 200 characters, and every sentence of the text is in some chunk."""
    emb = _emb(max_input_tokens=100)
    policy = policy_for(input_window(emb))
    sentences = [f"Sentence number {i} says the key is in drawer {i}." for i in range(40)]
    text = " ".join(sentences)
    chunks = policy.split(text)
    assert chunks and all(len(c) <= 100 * CHARS_PER_TOKEN for c in chunks)
    for s in sentences:
        assert any(s in c for c in chunks), s


def test_cli_flag_requires_a_service(tmp_path):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path), HF_HUB_OFFLINE="1")
    out = subprocess.run([sys.executable, "-m", "oramem.cli", "--db", str(tmp_path / "x.db"), "--embed-max-tokens", "64",
                          "add", "hello"], capture_output=True, text=True, env=env)
    assert out.returncode == 2 and "--embed-max-tokens applies to an --embed-url model" in out.stderr
    assert not (tmp_path / "x.db").exists()
