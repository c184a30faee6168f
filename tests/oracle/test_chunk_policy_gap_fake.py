"""Issue 23 / issue 28 on Oracle: the chunk policy an Oracle store writes with.

The SQLite store records its embedder identity, with the chunk policy that fits the
embedder's window (``oramem.chunking.policy_for``, key ``chunking``), and chunks, ranks and
groups its keyword rows by it. The Oracle engine records it too since catalog version 5
(``ORAMEM_STORES.EMBEDDER``; docs/embeddings.md): the driver sends the identity in the
open's settings, ``oramem_admin.open_store`` records it on a new store and reports it, and
the Python store's ``Normalizer`` chunks by the recorded policy and sends the tail handicap.

These tests state what issue 28 promises for an Oracle store. They were strict xfails while
the engine recorded no identity (the open's reply named none, so every store chunked with the
legacy 2,000-character policy). The keyword-passage work of issue 23 (docs/store-decisions.md,
"Keyword rows are passages") is built on it (tests/oracle/test_keyword_passages_fake.py).
Over the recording fake, no database: ``CatalogStandIn`` answers ``open_store`` as the package
does for a new store."""

from __future__ import annotations

import json
import re

from oramem import OracleDBMemoryStore, SchemaPolicy
from oramem.chunking import TAIL_HANDICAP, policy_for
from oramem.embedders import HashEmbedder
from oramem.embedders.base import InputWindow, input_window
from oramem.oracle import OracleDBEmbedder

from .fakes import FakePool, Recorder
from .plsql_standin import CatalogStandIn
from .test_driver_fake import SETTINGS_OUT
from .test_embedder_fake import answers

def _words(text: str) -> list[tuple[int, int]]:
    """A whitespace tokenizer's spans (one token per word), as an ONNX tokenizer's."""
    return [m.span() for m in re.finditer(r"\S+", text)]


class _WindowedHash(HashEmbedder):
    """A client-side embedder that reports a token window, as ``ONNXEmbedder`` does."""

    input_window = InputWindow(max_tokens=254, spans=_words, tokenizer="t")


def _store(embedder, rec: Recorder, strategy: str = "vector") -> OracleDBMemoryStore:
    return OracleDBMemoryStore(embedder, FakePool(rec), schema_policy=SchemaPolicy.CREATE_IF_NECESSARY,
                               memory_store_id="mystore", search_strategy=strategy)


def _sent_chunks(rec: Recorder) -> list[str]:
    batch = json.loads([c for c in rec.plsql if c.name == "oramem_store.add_json"][-1].binds["in_batch"])
    return [c["text"] for c in batch["records"][0]["chunks"]]


def test_an_oracle_store_chunks_to_a_client_embedders_token_window():
    rec = Recorder({"oramem_store.add_json": json.dumps(["a"])})
    CatalogStandIn(dict(SETTINGS_OUT, vector_dim=8)).install(rec.answers)
    embedder = _WindowedHash(8)
    store = _store(embedder, rec)
    text = " ".join(f"w{i}" for i in range(600))
    store.add([text], "memory", record_ids="a")
    chunks = _sent_chunks(rec)
    # what the SQLite store sends for the same embedder: a 128-token first window, then
    # 64-token tail windows (today: two chunks of 422 and 217 words)
    assert chunks == policy_for(input_window(embedder)).split(text, _words)


def test_an_oracle_store_chunks_to_an_in_database_models_window():
    out = answers(dim=3)
    out.update({"oramem_store.add_json": json.dumps(["a"])})
    rec = Recorder(out)
    CatalogStandIn(dict(SETTINGS_OUT, vector_dim=3)).install(rec.answers)
    embedder = OracleDBEmbedder(FakePool(rec), "ORAMEM_EMBED", embedding_dimension=3, max_input_tokens=256)
    store = _store(embedder, rec)
    store.add(["東京の住所は渋谷区です。" * 300], "memory", record_ids="a")
    # the embedder reads at most 512 characters a text (2 per token of its window, and never
    # over 4,000 bytes); today the chunks are 2,000 characters, 6,000 bytes
    assert max(len(c) for c in _sent_chunks(rec)) <= input_window(embedder).max_chars


def test_an_oracle_store_with_tail_windows_sends_the_tail_handicap():
    rec = Recorder({"oramem_search.search_json": json.dumps([])})
    CatalogStandIn(dict(SETTINGS_OUT, vector_dim=8)).install(rec.answers)
    store = _store(_WindowedHash(8), rec)
    store.search("passport", k=3)
    request = json.loads(rec.plsql[-1].binds["in_request"])
    assert request.get("tail_handicap") == TAIL_HANDICAP
