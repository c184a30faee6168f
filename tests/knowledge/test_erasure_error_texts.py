"""What a failed model reply leaves in the database after the erasure of a user it quoted
(KC-3.10, SC-14; red24).

A write of Bob's in a thread he shares with Alice carries her turns as its context
(``recent_messages``), so the model's reply to it may repeat her words. When that reply is not
the JSON the task asks for, the error used to quote it (``unparsable reply: '...'``, up to 120
characters; the HTTP provider's ``unexpected reply`` up to 200) and the quote was stored: in the
job's ``last_error``, in his event's ``trace_json`` (its ``error`` and its ``warnings``). Alice's
``forget`` strips her turns from Bob's queued write (KC-3.10) but left those copies, Bob's rows,
and the verification scan counted her word as *shared* (a live row holds it): the receipt said
clean. A write's errors and warnings now name the size of a failed reply, never its text
(``oramem.knowledge.errors.plain_text``); the exception a caller of the model itself gets still
quotes it.
"""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from oramem.knowledge.errors import LLMError, plain_text
from oramem.sqlite._sqlite import sqlite3
from oramem.knowledge.llm.tasks import parse_reply

from .helpers import extract

SECRET = "zanzibar"
ECHO = f"Sorry, I cannot. Alice said her passport is in {SECRET} and I will not repeat it."


def _rows_holding(path: str, needle: str) -> dict[str, int]:
    """Rows of every table of the file (FTS shadow tables aside) whose text holds ``needle``."""
    hits: dict[str, int] = {}
    con = sqlite3.connect(path)
    try:
        tables = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        for table in tables:
            if "fts" in table.lower():
                continue
            n = 0
            for row in con.execute(f'SELECT * FROM "{table}"'):
                n += any(isinstance(v, str) and needle in v.lower() for v in row)
            if n:
                hits[table] = n
    finally:
        con.close()
    return hits


def _shared_thread(store):
    store.add([f"my passport is in {SECRET}"], "message", thread_ids="S", user_ids="alice", agent_ids="a1", roles="user")
    store.add(["I keep mine at home"], "message", thread_ids="S", user_ids="bob", agent_ids="a1", roles="user")


def _jobs(km):
    with km._backend.read() as c:
        return [dict(r) for r in c.execute(sa.select(km._tables.job)).mappings()]


def test_a_failed_queued_write_keeps_no_quote_of_her_words_after_her_forget(km, llm, clock, store, tmp_path):
    path = str(tmp_path / "kg.db")
    _shared_thread(store)
    km.write("a1", "Bob keeps his passport at home", "Bob", user_id="bob", session_id="S", background=True,
             recent_messages=[f"Alice: my passport is in {SECRET}", "Bob: I keep mine at home"])
    llm.route("extract", ECHO)  # the model repeats her turn instead of answering in JSON
    report = km.process_jobs(backoff_base=0.001)
    assert report.retried == 1
    (job,) = _jobs(km)
    assert "unparsable reply" in job["last_error"] and SECRET not in job["last_error"]
    km.forget(user_id="alice")
    assert _rows_holding(path, SECRET) == {}
    (left,) = km.jobs()
    assert left.last_error and SECRET not in left.last_error


def test_bobs_failed_event_keeps_no_quote_of_her_words_after_her_forget(km, llm, clock, store, tmp_path):
    path = str(tmp_path / "kg.db")
    _shared_thread(store)
    llm.route("extract", ECHO)
    r = km.write("concierge", "Bob keeps his passport at home", "Bob", user_id="bob", session_id="S",
                 recent_messages=[f"Alice: my passport is in {SECRET}"])
    assert not r.success and r.event_id  # KC-7.3: the event is kept with its failure
    assert "unparsable reply" in r.error and SECRET not in r.error
    km.forget(user_id="alice")
    assert _rows_holding(path, SECRET) == {}


def test_a_degraded_reconcile_stores_no_quote_of_the_reply(km, llm, clock, store, tmp_path):
    """The warning of a step that fell back to rules is stored in the event's trace too."""
    path = str(tmp_path / "kg.db")
    llm.route("extract", extract([("Bob", "person")], [("Bob", "Bob lives in Lisbon", "home_city")]))
    km.write("concierge", "I live in Lisbon", "Bob", user_id="bob")
    clock.advance()
    llm.route("extract", extract([("Bob", "person")], [("Bob", "Bob lives in Porto", "home_city")]))
    llm.route("reconcile", ECHO)
    r = km.write("concierge", "I moved to Porto", "Bob", user_id="bob")
    assert r.degraded == ["reconcile"] and any("unparsable reply" in w for w in r.warnings)
    assert not any(SECRET in w for w in r.warnings)
    assert _rows_holding(path, SECRET) == {}


def test_the_exception_still_quotes_the_reply_for_its_caller():
    """Only what a write returns and stores withholds the reply: ``parse_reply``'s caller
    (a provider test, a debugging session) still sees it."""
    with pytest.raises(LLMError) as info:
        parse_reply(ECHO)
    assert SECRET in str(info.value)
    assert SECRET not in plain_text(info.value) and f"{len(ECHO)} characters" in plain_text(info.value)
    assert plain_text(ValueError("plain words")) == "plain words"


def test_her_own_failed_queued_write_goes_with_her(km, llm, clock, store, tmp_path):
    """Her own queued write (its message and its last_error) is hers: her ``forget`` deletes it."""
    path = str(tmp_path / "kg.db")
    km.write("a1", f"my passport is in {SECRET}", "Alice", user_id="alice", session_id="hers", background=True)
    llm.route("extract", ECHO)
    assert km.process_jobs(backoff_base=0.001).retried == 1
    km.forget(user_id="alice")
    assert km.jobs() == [] and _rows_holding(path, SECRET) == {}


def test_her_erasure_clears_the_error_of_a_queued_write_whose_context_held_her_words(km, llm, clock, store, tmp_path):
    """A provider of the caller's own (any ``LLMProvider``) may raise with the reply, or the
    prompt, in its message: the layer cannot tell, and ``last_error`` keeps it. A queued write
    whose context her erasure strips (her words were in its prompt) loses its error text too."""
    path = str(tmp_path / "kg.db")
    _shared_thread(store)
    km.write("a1", "Bob keeps his passport at home", "Bob", user_id="bob", session_id="S", background=True,
             recent_messages=[f"Alice: my passport is in {SECRET}", "Bob: I keep mine at home"])

    def provider_bug(payload):
        raise RuntimeError(f"could not use the reply to {payload.get('recent_messages')}")

    llm.route("extract", provider_bug)
    assert km.process_jobs(backoff_base=0.001).retried == 1
    (job,) = km.jobs()
    assert SECRET in job.last_error  # the provider's own words: the layer cannot withhold them
    km.forget(user_id="alice")
    (left,) = km.jobs()
    assert left.last_error and "erasure" in left.last_error and SECRET not in left.last_error
    assert _rows_holding(path, SECRET) == {}


def test_the_http_providers_unexpected_reply_is_withheld_in_its_plain_text():
    import httpx

    from oramem.knowledge import OpenAICompatibleProvider

    provider = OpenAICompatibleProvider("http://127.0.0.1:9/v1", "m")
    with pytest.raises(LLMError) as info:
        provider._result(httpx.Response(200, content=ECHO.encode()))
    assert SECRET in str(info.value) and "unexpected reply" in str(info.value)
    assert SECRET not in plain_text(info.value) and f"{len(ECHO.encode())} bytes" in plain_text(info.value)
