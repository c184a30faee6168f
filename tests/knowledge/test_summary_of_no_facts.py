"""Knowledge trial F10 (left34 item 4), KC-6.7: the summary refresh of an entity that has no
current fact left (all invalidated, deleted or erased). Before: a summary written recently was
not stale (no newer fact), so it kept naming the facts that were gone; once stale (no summary,
or older than the interval) the entity got an ``entity_summary`` LLM call over an empty fact
list, and the model's answer about nothing was stored. Now such an entity's summary is cleared
(no LLM call) and counted in ``summaries_cleared``."""

from __future__ import annotations

from datetime import timedelta

from .read_helpers import write_facts


def _summaries(km, user_id=None) -> dict:
    return {e.canonical_key: e.summary_text for e in km.entities("a1", user_id=user_id, include_inactive=True)}


def _summary_calls(llm) -> list:
    return [p for name, p in llm.calls if name == "entity_summary"]


def _model(llm):
    llm.route("entity_summary", lambda p: {"summary": "About " + p["display_name"] + ": " + "; ".join(p["facts"])})


def test_a_summary_of_deleted_facts_is_cleared_without_an_llm_call(km, llm, clock):
    write_facts(km, llm, [("Pedro", "person")], [("Pedro", "Pedro plays chess"), ("Pedro", "Pedro drinks coffee")])
    _model(llm)
    assert km.refresh_summaries("a1").summaries_refreshed == 1
    assert "chess" in _summaries(km)["person:pedro"]
    for f in km.get_all("a1"):
        assert km.delete("a1", f.fact_id)
    assert km.get_all("a1") == []
    # the delete clears the summaries of its facts' entities itself (red33: also when other facts
    # are left); the refresh path for facts that go without a delete (expired) is pinned below
    assert _summaries(km).get("person:pedro") is None, "a summary of facts that are gone"
    calls = len(_summary_calls(llm))
    res = km.refresh_summaries("a1")  # the summary is recent and no fact is newer: not stale before
    assert _summaries(km).get("person:pedro") is None, "a summary of facts that are gone"
    assert res.summaries_cleared == 0 and res.summaries_refreshed == 0
    assert len(_summary_calls(llm)) == calls
    # later, once the interval has passed: still no LLM call over nothing, nothing written
    clock.now = clock.now + timedelta(days=30)
    res = km.refresh_summaries("a1")
    assert len(_summary_calls(llm)) == calls and _summaries(km).get("person:pedro") is None
    assert (res.summaries_refreshed, res.summaries_cleared) == (0, 0)


def test_a_summary_an_erasure_cleared_is_not_rewritten_from_nothing(km, llm, clock):
    """An erasure clears the summaries written from the erased user's facts (``deletes.py``:
    ``summary_text = NULL``, so the next refresh rewrites them from what is left). When nothing
    is left, the refresh must not ask the model about the entity with nothing to say (before:
    an ``entity_summary`` call with ``facts == []``, whose reply was stored as its summary)."""
    import sqlalchemy as sa

    write_facts(km, llm, [("Ana", "person")], [("Ana", "Ana's pin is 4417")])
    _model(llm)
    assert km.refresh_summaries("a1").summaries_refreshed == 1
    assert "4417" in _summaries(km)["person:ana"]
    for f in km.get_all("a1"):
        assert km.delete("a1", f.fact_id)
    t = km._tables
    with km._backend.write("test", "a1") as c:  # what the erasure does to such a summary
        c.execute(sa.update(t.entity).where(t.entity.c.canonical_key == "person:ana")
                  .values(summary_text=None, summary_refreshed_at=None))
    calls = len(_summary_calls(llm))
    res = km.refresh_summaries("a1")
    assert len(_summary_calls(llm)) == calls, "an LLM call about nothing"
    assert _summaries(km).get("person:ana") is None
    assert (res.summaries_refreshed, res.summaries_cleared) == (0, 0)


def test_an_entity_with_facts_is_still_summarised_from_them(km, llm, clock):
    write_facts(km, llm, [("Pedro", "person")], [("Pedro", "Pedro plays chess")])
    _model(llm)
    res = km.refresh_summaries("a1")
    assert (res.summaries_refreshed, res.summaries_cleared) == (1, 0)
    assert _summary_calls(llm)[-1]["facts"] == ["Pedro plays chess"]


def _pin_then(km, llm, remove):
    write_facts(km, llm, [("Ana", "person")], [("Ana", "Ana's pin is 4417"), ("Ana", "Ana plays chess")])
    _model(llm)
    assert km.refresh_summaries("a1").summaries_refreshed == 1
    assert "4417" in _summaries(km)["person:ana"]
    pin = next(f for f in km.get_all("a1") if "4417" in f.fact_text)
    assert remove(km, pin.fact_id)
    assert [f.fact_text for f in km.get_all("a1")] == ["Ana plays chess"]


def test_a_summary_naming_a_deleted_fact_of_an_entity_with_facts_left_is_rewritten(km, llm, clock):
    """red33 (after left34 item 4): an entity that keeps other facts was not stale after one
    of its facts was deleted (its summary is recent, no fact is newer), so the summary went on
    naming the deleted fact ('Ana's pin is 4417') until summary_refresh_interval_days passed.
    The delete now clears the summaries of the entities linked to the facts it removes, as an
    erasure does, and the next refresh rewrites them from what is left."""
    _pin_then(km, llm, lambda km, fid: km.delete("a1", fid))
    assert "4417" not in (_summaries(km).get("person:ana") or ""), "a summary naming a deleted fact"
    res = km.refresh_summaries("a1")
    assert res.summaries_refreshed == 1 and _summary_calls(llm)[-1]["facts"] == ["Ana plays chess"]
    assert _summaries(km)["person:ana"] == "About Ana: Ana plays chess"


def test_a_summary_naming_a_retracted_fact_is_rewritten(km, llm, clock):
    """The same for retract_fact (it leaves current reads and retrieval; the summary did not)."""
    _pin_then(km, llm, lambda km, fid: km.retract_fact("a1", fid))
    assert "4417" not in (_summaries(km).get("person:ana") or ""), "a summary naming a retracted fact"
    res = km.refresh_summaries("a1")
    assert res.summaries_refreshed == 1 and _summaries(km)["person:ana"] == "About Ana: Ana plays chess"


def test_a_summary_of_expired_facts_is_cleared_by_the_refresh(km, llm, clock):
    """The refresh's own clearing (F10), for facts that leave current reads without a delete or
    a retract: past their TTL. The summary is recent (2 days, interval 7) and no fact is newer,
    so it is not stale; it is cleared, counted, with no LLM call."""
    import sqlalchemy as sa

    write_facts(km, llm, [("Pedro", "person")], [("Pedro", "Pedro plays chess")])
    _model(llm)
    assert km.refresh_summaries("a1").summaries_refreshed == 1
    t = km._tables
    with km._backend.write("test", "a1") as c:  # a one-day TTL on the fact
        c.execute(sa.update(t.fact).values(ttl_days=1))
    clock.now = clock.now + timedelta(days=2)
    assert km.get_all("a1") == []
    calls = len(_summary_calls(llm))
    res = km.refresh_summaries("a1")
    assert _summaries(km).get("person:pedro") is None, "a summary of facts that are gone"
    assert (res.summaries_refreshed, res.summaries_cleared) == (0, 1)
    assert len(_summary_calls(llm)) == calls
