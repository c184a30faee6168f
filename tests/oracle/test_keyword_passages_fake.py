"""Issue 23 on Oracle: a HYBRID store whose recorded chunk policy counts tokens (a client-side
``ONNXEmbedder``'s windows) sends each retrieval row's keyword passage (``keyword_text``, the
SQLite engine's grouping: ``oramem.chunking.keyword_passages``) with ``add_json`` and an
update's ``replace`` chunks; ``oramem_store`` writes them to the store's passage table
``OM_<ID>_KWP``, whose CONTEXT index the keyword leg ranks (docs/store-decisions.md, "Keyword
rows are passages"). Other stores send none. Over the recording fake, no database:
``CatalogStandIn`` answers ``open_store``; ``PassageRule`` refuses a batch as
``oramem_store.add_json`` / ``update_json`` do (-20002, before anything is written: the rule is
checked as text in tests/plsql/test_keyword_passages_plsql.py). Static-checked, not run
against Oracle."""

from __future__ import annotations

import json
import re
from typing import Any, Optional

import pytest

from oramem import OracleDBMemoryStore, SchemaPolicy
from oramem.chunking import KEYWORD_ROW_CHARS, keyword_passages
from oramem.embedders import HashEmbedder
from oramem.embedders.base import InputWindow

from .fakes import Call, FakeLOB, FakePool, Recorder, db_error
from .plsql_standin import CatalogStandIn
from .test_driver_fake import SETTINGS_OUT


def _words(text: str) -> list[tuple[int, int]]:
    return [m.span() for m in re.finditer(r"\S+", text)]


class _WindowedHash(HashEmbedder):
    """A client-side embedder that reports a token window, as ``ONNXEmbedder`` does."""

    input_window = InputWindow(max_tokens=254, spans=_words, tokenizer="t")


LONG = " ".join(f"w{i}" for i in range(3000))   # ~17,000 characters: dozens of windows


class PassageRule:
    """``oramem_store``'s rule for ``keyword_text`` (plsql/oramem_store.pkb, ``check_passages``):
    a store that groups (``keyword_passages`` = 1 in the registry) takes every chunk of a
    record with the member or none of them, the first chunk's a non-empty string, the others a
    string or null; a store that does not group refuses the member. Raises -20002 (gc_invalid_payload) as the
    package does, before anything is written; else records what would be stored."""

    def __init__(self, groups: bool) -> None:
        self.groups = groups
        self.passages: dict[str, list[tuple[int, str]]] = {}

    def check(self, record_id: str, chunks: list[dict[str, Any]], where: str) -> None:
        has = [("keyword_text" in c) for c in chunks]
        if not any(has):
            if self.groups:
                self.passages[record_id] = [(i + 1, c["text"]) for i, c in enumerate(chunks)]
            return
        if not self.groups:
            raise db_error(20002, f"{where}: keyword_text is accepted only by a HYBRID store whose chunk "
                                  "policy counts tokens")
        first = chunks[0].get("keyword_text")
        if not all(has) or not isinstance(first, str) or first == "" or any(
                c["keyword_text"] is not None and not isinstance(c["keyword_text"], str) for c in chunks):
            raise db_error(20002, f"{where}: give keyword_text on every chunk of a record or on none, the "
                                  "first chunk's a non-empty string, the others a string or null")
        self.passages[record_id] = [(i + 1, c["keyword_text"]) for i, c in enumerate(chunks)
                                    if c["keyword_text"] is not None]

    def install(self, answers: dict) -> None:
        answers.update({"oramem_store.add_json": self.add, "oramem_store.update_json": self.update})

    def add(self, call: Call) -> str:
        batch = json.loads(_text(call.binds["in_batch"]))
        for i, r in enumerate(batch["records"]):
            self.check(r["id"], r.get("chunks") or [], f"records[{i}].chunks")
        return json.dumps([r["id"] for r in batch["records"]])

    def update(self, call: Call) -> int:
        req = json.loads(_text(call.binds["in_request"]))
        if req.get("retrieval") == "replace":
            self.check(req["record_id"], req.get("chunks") or [], "update request.chunks")
        return 1


def _text(v: Any) -> Any:
    return v.data if isinstance(v, FakeLOB) else v


def _store(rec: Recorder, strategy: str, recorded: Optional[dict] = None,
           has_rows: bool = False) -> OracleDBMemoryStore:
    CatalogStandIn(dict(SETTINGS_OUT, vector_dim=8, search_strategy=strategy), recorded=recorded,
                   has_rows=has_rows).install(rec.answers)
    return OracleDBMemoryStore(_WindowedHash(8), FakePool(rec), schema_policy=SchemaPolicy.CREATE_IF_NECESSARY,
                               memory_store_id="mystore", search_strategy=strategy)


def _sent(rec: Recorder, name: str = "oramem_store.add_json") -> list[dict]:
    call = [c for c in rec.plsql if c.name == name][-1]
    payload = json.loads(_text(call.binds["in_batch" if name.endswith("add_json") else "in_request"]))
    return payload["records"][0]["chunks"] if "records" in payload else payload["chunks"]


def test_a_grouping_hybrid_store_sends_each_rows_keyword_passage():
    rec = Recorder({})
    rule = PassageRule(groups=True)
    rule.install(rec.answers)
    store = _store(rec, "hybrid")
    store.add([LONG], "memory", record_ids="a")
    chunks = _sent(rec)
    texts = [c["text"] for c in chunks]
    assert len(texts) > 10                         # token windows
    assert [c["keyword_text"] for c in chunks] == keyword_passages(texts, KEYWORD_ROW_CHARS)
    # passages of about 2,000 characters, far fewer than the windows, covering every row
    stored = rule.passages["a"]
    assert 1 < len(stored) < len(texts) / 3
    assert " ".join(p for _, p in stored) == " ".join(texts)


def test_a_grouping_store_sends_passages_with_an_updates_replacement_chunks():
    rec = Recorder({})
    rule = PassageRule(groups=True)
    rule.install(rec.answers)
    store = _store(rec, "hybrid")
    store.add(["short"], "memory", record_ids="a")
    assert [c["keyword_text"] for c in _sent(rec)] == ["short"]
    store.update("memory", "a", text=LONG)
    chunks = _sent(rec, "oramem_store.update_json")
    assert [c["keyword_text"] for c in chunks] == keyword_passages([c["text"] for c in chunks], KEYWORD_ROW_CHARS)
    assert len(rule.passages["a"]) > 1


@pytest.mark.parametrize("strategy", ["vector", "keyword"])
def test_a_vector_or_keyword_store_sends_no_passages(strategy):
    rec = Recorder({})
    PassageRule(groups=False).install(rec.answers)
    store = _store(rec, strategy)
    store.add([LONG], "memory", record_ids="a")
    assert all("keyword_text" not in c for c in _sent(rec))


def test_a_hybrid_store_recorded_without_a_token_policy_sends_no_passages():
    # a store holding rows from before catalog version 5 adopts the identity without its
    # chunk policy: legacy 2,000-character chunks, which are passages already
    rec = Recorder({})
    PassageRule(groups=False).install(rec.answers)
    store = _store(rec, "hybrid", has_rows=True)
    store.add([LONG], "memory", record_ids="a")
    chunks = _sent(rec)
    assert all("keyword_text" not in c for c in chunks) and max(len(c["text"]) for c in chunks) > 1500


def test_the_package_rule_refuses_passages_on_some_chunks_only():
    rule = PassageRule(groups=True)
    with pytest.raises(Exception, match="ORA-20002"):
        rule.check("a", [{"text": "x", "keyword_text": "x y"}, {"text": "y"}], "records[0].chunks")
    with pytest.raises(Exception, match="ORA-20002"):
        rule.check("a", [{"text": "x", "keyword_text": None}, {"text": "y", "keyword_text": "y"}], "records[0].chunks")
    with pytest.raises(Exception, match="ORA-20002"):
        PassageRule(groups=False).check("a", [{"text": "x", "keyword_text": "x"}], "records[0].chunks")
    assert rule.passages == {}


def test_the_driver_reports_the_packages_refusal():
    rec = Recorder({})
    rule = PassageRule(groups=False)     # the package's store does not group, the driver thinks it does
    rule.install(rec.answers)
    store = _store(rec, "hybrid")
    with pytest.raises(ValueError, match="keyword_text"):
        store.add([LONG], "memory", record_ids="a")
