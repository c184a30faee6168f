"""PL/SQL text tests for the red-team round of 2026-12-07 k (helper red21): erasure at the
user boundary. Each test fails on the text before its fix. Static-checked, not run against
Oracle."""

from __future__ import annotations

import re

from .test_round3_findings import code
from .test_store_findings import branch, unit


def test_an_actors_cascade_event_names_every_thread_that_held_its_records():
    """KC-3.10: after Alice's erasure no queued knowledge write keeps her words in its
    context. In a thread she shared with Bob (it stays), Bob's queued write carries turns
    copied from that conversation, hers among them; the knowledge eraser can only find those
    threads if the cascade's event names them. ``delete_record_json`` now puts
    ``actor_thread_ids`` (the threads holding one of the actor's own records, read before the
    DELETE) into the event, as the SQLite engine's ``mutations.actor_thread_ids``; the
    driver's ``_reply_event`` reads it."""
    body = unit(code("oramem_store.pkb"), "delete_record_json")
    cascade = branch(body, "ELSIF in_cascade = 1 AND oramem_registry.is_profile_type(l_type) THEN", "call_hook(l_store, l_event);")
    read = re.search(r"'SELECT DISTINCT r\.thread_id FROM ' \|\| l_rec_tab \|\| ' r'\s*"
                     r"\|\| ' WHERE r\.' \|\| l_col \|\| ' = :1 AND r\.thread_id IS NOT NULL AND r\.record_type <> ''thread'''\s*"
                     r"BULK COLLECT INTO l_athreads USING in_record_id;", cascade)
    assert read, "the actor's threads are read"
    delete = cascade.index("'DELETE FROM ' || l_rec_tab")
    assert read.start() < delete, "before its records are deleted"
    put = re.search(r"l_event\.put\('actor_thread_ids', json_array_of\(l_athreads\)\);", cascade)
    assert put and put.start() > cascade.index("l_event := make_event("), "into the event, after it is made"
    decl = body[: body.index("BEGIN")]
    assert re.search(r"l_athreads\s+vc_tab_t;", decl)
    helper = unit(code("oramem_store.pkb"), "json_array_of")  # every element, in order, as make_event's id lists
    assert re.search(r"FOR i IN 1 \.\. in_vals\.COUNT LOOP\s*l_arr\.append\(in_vals\(i\)\);\s*END LOOP;\s*"
                     r"RETURN l_arr;", helper)
