"""KC-0.1 / SC-2.2 (left35 item 2): an id that is empty or only white space names no fact,
intention or event. Before, get('') / get(' ') answered None, delete and fulfill_intention
answered False, retract_fact(' ') False (it refused only ''), and `oramem knowledge history A ' '`
said "no fact" as for an unknown id: the caller's mistake looked like a row that is not there.
Now each is a ValueError that says to give the row's id, before anything is read or written,
as the store's check_id does for record ids and get_job for job ids."""

from __future__ import annotations

import asyncio

import pytest
from click.testing import CliRunner

from oramem.cli import cli

from .helpers import extract

BLANKS = ["", " ", "\t\r", "\u2028"]


@pytest.mark.parametrize("blank", BLANKS)
def test_a_blank_fact_id_is_refused(make_km, llm, blank):
    km = make_km()
    llm.route("extract", extract([("Ana", "person")], [("Ana", "Ana likes tea")]))
    r = km.write("a1", "tea", "Pedro")
    fact_id = r.facts_added[0]["fact_id"]
    calls = {
        "get": lambda i: km.get("a1", i),
        "history": lambda i: km.history("a1", i),
        "retract_fact": lambda i: km.retract_fact("a1", i),
        "confirm_fact": lambda i: km.confirm_fact("a1", i),
        "annotate_fact": lambda i: km.annotate_fact("a1", i, "note"),
        "delete": lambda i: km.delete("a1", i),
        "get_async": lambda i: asyncio.run(km.get_async("a1", i)),
        "delete_async": lambda i: asyncio.run(km.delete_async("a1", i)),
    }
    for name, call in calls.items():
        with pytest.raises(ValueError, match=r"fact_id must be a non-empty string \(not only white space\).*give the fact's id"):
            call(blank)
        assert name and km.get("a1", fact_id) is not None  # nothing was touched
    with pytest.raises(ValueError, match=r"intention_id must be .*give the intention's id"):
        km.fulfill_intention("a1", blank)
    with pytest.raises(ValueError, match=r"event_id must be .*give the event's id"):
        km.reprocess_event("a1", blank)
    # a visible character is an id: unknown, so the answers for a row that is not there
    assert km.get("a1", " x ") is None and km.delete("a1", " x ") is False
    assert km.retract_fact("a1", " x ") is False and km.fulfill_intention("a1", " x ") is False
    assert km.get("a1", fact_id).fact_text == "Ana likes tea"


@pytest.mark.parametrize("blank", ["", " "])
def test_cli_history_refuses_a_blank_fact_id(tmp_path, blank):
    path = str(tmp_path / "kg.db")
    runner = CliRunner()
    res = runner.invoke(cli, ["--db", path, "--embed-dim", "64", "knowledge", "write", "a1", "Ana keeps bees",
                              "--speaker", "Pedro", "--background"])
    assert res.exit_code == 0, res.output
    res = runner.invoke(cli, ["--db", path, "--embed-dim", "64", "knowledge", "history", "a1", blank])
    assert res.exit_code == 2, res.output
    assert "FACT_ID must be a non-empty string" in res.output and "give the fact's id" in res.output, res.output
    assert "no fact " not in res.output and "FactDetail" not in res.output and "Traceback" not in res.output, res.output
