"""The second held-out chat set of the retrieval bench (``bench/chat2.jsonl``, read by
``bench.quality.load_chat``) stays well formed: it parses, every evidence id names a turn
of the question's own user, it keeps its size (at least 400 turns, 90 questions, five kinds
of at least 20 each) and its questions share one haystack of their own, apart from the
first chat set's."""

from __future__ import annotations

import importlib.util
import json
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CHAT2 = ROOT / "bench" / "chat2.jsonl"
KINDS = {"a-paraphrase", "b-rare-detail", "c-long-turn", "d-assistant", "e-distractor"}


def _quality():
    # bench/ is not an installed package: load its module from the checkout
    spec = importlib.util.spec_from_file_location("bench_quality_under_test2", ROOT / "bench" / "quality.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def _rows() -> list[dict]:
    return [json.loads(line) for line in CHAT2.read_text(encoding="utf-8").splitlines() if line.strip()]


def test_every_line_is_a_turn_or_a_question() -> None:
    rows = _rows()
    turns = [r for r in rows if "turn" in r]
    questions = [r for r in rows if "question" in r]
    assert len(turns) + len(questions) == len(rows)
    assert all(r["role"] in ("user", "assistant") and r["text"].strip() for r in turns)
    assert len({r["turn"] for r in turns}) == len(turns)
    assert all(r["turn"].startswith(r["session"] + "-t") for r in turns)
    assert len({r["id"] for r in questions}) == len(questions)
    kinds = Counter(r["kind"] for r in questions)
    assert set(kinds) == KINDS
    assert min(kinds.values()) >= 20


def test_evidence_names_turns_of_the_questions_user() -> None:
    rows = _rows()
    owner = {r["turn"]: r["user"] for r in rows if "turn" in r}
    for q in (r for r in rows if "question" in r):
        assert q["evidence"], q["id"]
        assert len(set(q["evidence"])) == len(q["evidence"]), q["id"]
        assert all(owner.get(e) == q["user"] for e in q["evidence"]), q["id"]


def test_no_user_or_text_of_the_first_chat_set() -> None:
    first = [json.loads(line) for line in (ROOT / "bench" / "chat.jsonl").read_text(encoding="utf-8").splitlines() if line.strip()]
    rows = _rows()
    assert not {r["user"] for r in first if "turn" in r} & {r["user"] for r in rows if "turn" in r}
    assert not {r["text"] for r in first if "turn" in r} & {r["text"] for r in rows if "turn" in r}
    assert not {r["question"] for r in first if "question" in r} & {r["question"] for r in rows if "question" in r}


def test_loader_builds_one_shared_haystack_of_the_set_size() -> None:
    quality = _quality()
    questions = quality.load_chat(quality.CHAT2)
    assert len(questions) >= 90
    docs = questions[0].docs
    assert len(docs) >= 400
    assert all(q.docs is docs for q in questions)
    ids = {doc_id for doc_id, _ in docs}
    assert all(set(q.evidence) <= ids for q in questions)
    assert "chat2" in quality.SETS


def test_the_set_searches_one_haystack_apart_from_the_first_chat_sets() -> None:
    # evaluate() loads a store per haystack key: chat2's questions must share one key (not
    # one store per question) and must not reuse chat's store when both sets run together
    quality = _quality()
    keys = {quality.haystack_key(q.qid) for q in quality.load_chat(quality.CHAT2)}
    first = {quality.haystack_key(q.qid) for q in quality.load_chat(quality.CHAT)}
    assert len(keys) == 1 and len(first) == 1
    assert keys != first
