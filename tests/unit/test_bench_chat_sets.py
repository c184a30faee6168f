"""The held-out chat sets of the retrieval bench (``bench/chat.jsonl``, ``bench/chat2.jsonl``
and ``bench/chat3.jsonl``, read by ``bench.quality.load_chat``) stay well formed: they parse,
every evidence id names a turn of the question's own user (in chat3, which has threads shared
by two users: a turn of a thread she speaks in), they keep their size (at least 400 turns in
the first two, 350 in the third; 80, 90 and 150 questions, at least 20 of each kind in the
second and third), and each set's questions share one haystack of their own; no set shares a
user, turn text or question with another."""

from __future__ import annotations

import importlib.util
import json
import sys
from collections import Counter
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
KINDS = {"a-paraphrase", "b-rare-detail", "c-long-turn", "d-assistant", "e-distractor"}
#: file name -> (at least this many questions, at least this many of each kind, set name,
#: at least this many turns, whether evidence may be another user's turn of a shared thread)
SETS = {
    "chat.jsonl": (80, 1, "chat", 400, False),
    "chat2.jsonl": (90, 20, "chat2", 400, False),
    "chat3.jsonl": (150, 20, "chat3", 350, True),
}


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
    turns = {r["turn"]: r for r in rows if "turn" in r}
    speakers: dict[str, set[str]] = {}
    for turn in turns.values():
        speakers.setdefault(turn["session"], set()).add(turn["user"])
    shared = SETS[name][4]
    for q in (r for r in rows if "question" in r):
        assert q["evidence"], q["id"]
        assert len(set(q["evidence"])) == len(q["evidence"]), q["id"]
        assert all(e in turns for e in q["evidence"]), q["id"]
        for e in q["evidence"]:
            turn = turns[e]
            if shared:
                assert q["user"] in speakers[turn["session"]], (q["id"], e)
            else:
                assert turn["user"] == q["user"], (q["id"], e)


@pytest.mark.parametrize("name", SETS)
def test_loader_builds_one_shared_haystack_of_the_set_size(name: str) -> None:
    quality = _quality()
    questions = quality.load_chat(ROOT / "bench" / name)
    assert len(questions) >= SETS[name][0]
    docs = questions[0].docs
    assert len(docs) >= SETS[name][3]
    assert all(q.docs is docs for q in questions)
    ids = {doc_id for doc_id, _ in docs}
    assert all(set(q.evidence) <= ids for q in questions)
    assert SETS[name][2] in quality.SETS


@pytest.mark.parametrize(("one", "other"), [("chat.jsonl", "chat2.jsonl"), ("chat.jsonl", "chat3.jsonl"),
                                            ("chat2.jsonl", "chat3.jsonl")])
def test_no_set_shares_anything_with_another(one: str, other: str) -> None:
    first, second = _rows(one), _rows(other)
    for field, kind in (("user", "turn"), ("text", "turn"), ("question", "question")):
        assert not {r[field] for r in first if kind in r} & {r[field] for r in second if kind in r}, field


def test_each_set_searches_one_haystack_of_its_own() -> None:
    # evaluate() loads a store per haystack key: a set's questions must share one key (not
    # one store per question) and must not reuse the other set's store when both run
    quality = _quality()
    keys = [{quality.haystack_key(q.qid) for q in quality.load_chat(path)}
            for path in (quality.CHAT, quality.CHAT2, quality.CHAT3)]
    assert all(len(k) == 1 for k in keys)
    assert len(set().union(*keys)) == 3
