"""The held-out chat sets of the retrieval bench (``bench/chat.jsonl`` and
``bench/chat2.jsonl``, read by ``bench.quality.load_chat``) stay well formed: they parse,
every evidence id names a turn of the question's own user, they keep their size (at least
400 turns; 80 questions in the first, 90 in the second, with at least 20 of each kind), and
each set's questions share one haystack of their own; the second shares no user, turn text
or question with the first."""

from __future__ import annotations

import importlib.util
import json
import sys
from collections import Counter
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
KINDS = {"a-paraphrase", "b-rare-detail", "c-long-turn", "d-assistant", "e-distractor"}
#: file name -> (at least this many questions, at least this many of each kind, set name)
SETS = {"chat.jsonl": (80, 1, "chat"), "chat2.jsonl": (90, 20, "chat2")}


def _quality():
    # bench/ is not an installed package: load its module from the checkout
    spec = importlib.util.spec_from_file_location("bench_quality_under_test", ROOT / "bench" / "quality.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def _rows(name: str) -> list[dict]:
    return [json.loads(line) for line in (ROOT / "bench" / name).read_text(encoding="utf-8").splitlines() if line.strip()]


@pytest.mark.parametrize("name", SETS)
def test_every_line_is_a_turn_or_a_question(name: str) -> None:
    rows = _rows(name)
    turns = [r for r in rows if "turn" in r]
    questions = [r for r in rows if "question" in r]
    assert len(turns) + len(questions) == len(rows)
    assert all(r["role"] in ("user", "assistant") and r["text"].strip() for r in turns)
    assert len({r["turn"] for r in turns}) == len(turns)
    assert all(r["turn"].startswith(r["session"] + "-t") for r in turns)
    assert len({r["id"] for r in questions}) == len(questions)
    kinds = Counter(r["kind"] for r in questions)
    assert set(kinds) == KINDS and min(kinds.values()) >= SETS[name][1]


@pytest.mark.parametrize("name", SETS)
def test_evidence_names_turns_of_the_questions_user(name: str) -> None:
    rows = _rows(name)
    owner = {r["turn"]: r["user"] for r in rows if "turn" in r}
    for q in (r for r in rows if "question" in r):
        assert q["evidence"], q["id"]
        assert len(set(q["evidence"])) == len(q["evidence"]), q["id"]
        assert all(owner.get(e) == q["user"] for e in q["evidence"]), q["id"]


@pytest.mark.parametrize("name", SETS)
def test_loader_builds_one_shared_haystack_of_the_set_size(name: str) -> None:
    quality = _quality()
    questions = quality.load_chat(ROOT / "bench" / name)
    assert len(questions) >= SETS[name][0]
    docs = questions[0].docs
    assert len(docs) >= 400
    assert all(q.docs is docs for q in questions)
    ids = {doc_id for doc_id, _ in docs}
    assert all(set(q.evidence) <= ids for q in questions)
    assert SETS[name][2] in quality.SETS


def test_the_second_set_shares_nothing_with_the_first() -> None:
    first, second = _rows("chat.jsonl"), _rows("chat2.jsonl")
    for field, kind in (("user", "turn"), ("text", "turn"), ("question", "question")):
        assert not {r[field] for r in first if kind in r} & {r[field] for r in second if kind in r}, field


def test_each_set_searches_one_haystack_of_its_own() -> None:
    # evaluate() loads a store per haystack key: a set's questions must share one key (not
    # one store per question) and must not reuse the other set's store when both run
    quality = _quality()
    keys = {quality.haystack_key(q.qid) for q in quality.load_chat(quality.CHAT2)}
    first = {quality.haystack_key(q.qid) for q in quality.load_chat(quality.CHAT)}
    assert len(keys) == 1 and len(first) == 1 and keys != first
