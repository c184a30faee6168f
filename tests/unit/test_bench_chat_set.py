"""The held-out chat set of the retrieval bench (``bench/chat.jsonl``, read by
``bench.quality.load_chat``) stays well formed: it parses, every evidence id names a turn
of the question's own user, and it keeps its size (at least 400 turns, 80 questions)."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CHAT = ROOT / "bench" / "chat.jsonl"
KINDS = {"a-paraphrase", "b-rare-detail", "c-long-turn", "d-assistant", "e-distractor"}


def _quality():
    # bench/ is not an installed package: load its module from the checkout
    spec = importlib.util.spec_from_file_location("bench_quality_under_test", ROOT / "bench" / "quality.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def _rows() -> list[dict]:
    return [json.loads(line) for line in CHAT.read_text(encoding="utf-8").splitlines() if line.strip()]


def test_every_line_is_a_turn_or_a_question() -> None:
    rows = _rows()
    turns = [r for r in rows if "turn" in r]
    questions = [r for r in rows if "question" in r]
    assert len(turns) + len(questions) == len(rows)
    assert all(r["role"] in ("user", "assistant") and r["text"].strip() for r in turns)
    assert len({r["turn"] for r in turns}) == len(turns)
    assert len({r["id"] for r in questions}) == len(questions)
    assert {r["kind"] for r in questions} == KINDS


def test_evidence_names_turns_of_the_questions_user() -> None:
    rows = _rows()
    owner = {r["turn"]: r["user"] for r in rows if "turn" in r}
    for q in (r for r in rows if "question" in r):
        assert q["evidence"], q["id"]
        assert all(owner.get(e) == q["user"] for e in q["evidence"]), q["id"]


def test_loader_builds_one_shared_haystack_of_the_set_size() -> None:
    questions = _quality().load_chat(CHAT)
    assert len(questions) >= 80
    docs = questions[0].docs
    assert len(docs) >= 400
    assert all(q.docs is docs for q in questions)
    ids = {doc_id for doc_id, _ in docs}
    assert all(set(q.evidence) <= ids for q in questions)
    assert all(q.qid.startswith("chat-") for q in questions)  # evaluate() keys the shared haystack on it
