"""KC-2: LLM protocol, OpenAI-compatible provider, ScriptedLLM, reply parsing; and the
``knowledge`` CLI group against the loopback server."""

from __future__ import annotations

import json
import logging

import pytest
from click.testing import CliRunner

from oramem.knowledge import (
    BaseLLMProvider,
    LLMError,
    LLMProvider,
    LLMTimeout,
    OpenAICompatibleEmbedder,
    OpenAICompatibleProvider,
    TokenUsage,
)
from oramem.knowledge.llm.tasks import build_messages, call_task, parse_reply
from oramem.testing import Delay, HashEmbedder, ScriptedLLM

from .helpers import extract
from .llm_server import LLMServer


@pytest.fixture
def server():
    s = LLMServer(ScriptedLLM({"echo": lambda p: {"got": p}}))
    yield s
    s.close()


def msgs(task="echo", payload=None):
    return build_messages(task, payload or {"x": 1})


def test_token_usage_adds():
    assert TokenUsage(1, 2, 3) + TokenUsage(10, 20, 30) == TokenUsage(11, 22, 33)
    assert sum([TokenUsage(1, 1, 2), TokenUsage(2, 2, 4)], TokenUsage()) == TokenUsage(3, 3, 6)


def test_prompt_framing():
    m = build_messages("extract", {"message": "hi"})
    assert m[0]["role"] == "system" and m[0]["content"].startswith("[oramem-task:extract]")
    assert "first person" in m[0]["content"].lower() and "occurred_at" in m[0]["content"]
    assert m[-1]["content"].endswith('<oramem-input>{"message": "hi"}</oramem-input>')


def test_parse_reply_tolerant():
    assert parse_reply('```json\n{"a": {"b": 1}}\n```') == {"a": {"b": 1}}
    assert parse_reply('Sure! {"a": "}"} trailing {"z": 2}') == {"a": "}"}
    with pytest.raises(LLMError):
        parse_reply("no json here")


async def test_provider_json_mode_usage_and_key(server, monkeypatch):
    monkeypatch.setenv("ORAMEM_LLM_API_KEY", "sk-secret-123")
    p = OpenAICompatibleProvider(server.base_url, "m1")
    assert isinstance(p, LLMProvider) and isinstance(p, BaseLLMProvider)
    r = await p.complete_async(msgs(), response_format={"type": "json_object"}, max_tokens=50)
    assert json.loads(r.text) == {"got": {"x": 1}}
    assert r.usage == TokenUsage(11, 7, 18)
    assert server.requests[0]["response_format"] == {"type": "json_object"}
    assert server.requests[0]["model"] == "m1" and server.requests[0]["max_tokens"] == 50
    assert server.headers[0]["Authorization"] == "Bearer sk-secret-123"
    assert "sk-secret" not in repr(p)


def test_provider_sync_twin(server):
    p = OpenAICompatibleProvider(server.base_url, "m1")
    assert json.loads(p.complete(msgs()).text) == {"got": {"x": 1}}


async def test_provider_retries_then_succeeds(server):
    server.failures = [(500, "boom"), (429, "slow down")]
    p = OpenAICompatibleProvider(server.base_url, "m", max_retries=2)
    p.backoff_base = 0.0
    r = await p.complete_async(msgs())
    assert json.loads(r.text)["got"] == {"x": 1} and len(server.requests) == 3


async def test_provider_gives_up_with_status(server):
    server.failures = [(503, "down")] * 5
    p = OpenAICompatibleProvider(server.base_url, "m", max_retries=1)
    p.backoff_base = 0.0
    with pytest.raises(LLMError, match="503"):
        await p.complete_async(msgs())
    assert len(server.requests) == 2


async def test_provider_non_retryable_status_raises_with_body(server):
    server.failures = [(404, "model not found: m")]
    p = OpenAICompatibleProvider(server.base_url, "m")
    with pytest.raises(LLMError, match="404.*model not found"):
        await p.complete_async(msgs())
    assert len(server.requests) == 1


async def test_provider_response_format_fallback_is_remembered(server):
    server.reject_response_format = True
    p = OpenAICompatibleProvider(server.base_url, "m")
    r = await p.complete_async(msgs(), response_format={"type": "json_object"})
    assert json.loads(r.text)["got"] == {"x": 1}
    assert "response_format" in server.requests[0] and "response_format" not in server.requests[1]
    assert "JSON" in server.requests[1]["messages"][0]["content"]
    await p.complete_async(msgs(), response_format={"type": "json_object"})
    assert len(server.requests) == 3 and "response_format" not in server.requests[2]


async def test_provider_timeout(server):
    server.delay = 0.5
    p = OpenAICompatibleProvider(server.base_url, "m", timeout=0.1, max_retries=0)
    with pytest.raises(LLMTimeout):
        await p.complete_async(msgs())


def test_provider_argument_checks():
    with pytest.raises(ValueError):
        OpenAICompatibleProvider("ftp://x", "m")
    with pytest.raises(ValueError):
        OpenAICompatibleProvider("http://x", "")
    assert OpenAICompatibleEmbedder.__module__.startswith("oramem.embedders")


async def test_scripted_routes_on_task_not_order():
    llm = ScriptedLLM({"a": {"v": "A"}, "b": [{"v": 1}, {"v": 2}], "c": lambda p: {"v": p["x"] * 2}, "d": ValueError,
                       "e": Delay(0.01, {"v": "late"})})
    order = ["b", "a", "c", "b", "b", "e"]
    got = []
    for t in order:
        got.append(json.loads((await llm.complete_async(build_messages(t, {"x": 21}))).text)["v"])
    assert got == [1, "A", 42, 2, 2, "late"]
    with pytest.raises(ValueError):
        await llm.complete_async(build_messages("d", {}))
    with pytest.raises(LLMError, match="no route for task 'zzz'"):
        await llm.complete_async(build_messages("zzz", {}))
    assert [t for t, _ in llm.calls] == order + ["d", "zzz"]
    with pytest.raises(RuntimeError, match="complete_async"):
        ScriptedLLM(default={"ok": 1}).complete(build_messages("q", {}))


def test_scripted_default_and_sync_complete():
    assert ScriptedLLM(default={"ok": 1}).complete(build_messages("q", {})).text == '{"ok": 1}'


async def test_call_task_timeout_and_schema():
    llm = ScriptedLLM({"extract": Delay(0.3, {}), "reconcile": {"nope": 1}, "event_emotion": {"emotion": "joy", "intensity": 0.4, "energy": "low"}})
    with pytest.raises(LLMTimeout):
        await call_task(llm, "extract", {}, 0.05)
    with pytest.raises(LLMError, match="decisions"):
        await call_task(llm, "reconcile", {}, 1)
    reply, usage = await call_task(llm, "event_emotion", {"text": "yay"}, 1)
    assert reply["emotion"] == "joy" and usage.total_tokens > 0


def test_hash_embedder_reexport():
    from oramem.embedders import HashEmbedder as H

    assert HashEmbedder is H


# ----------------------------------------------------------------------------- CLI
def _state(tmp_path, as_json=False):
    from oramem.cli import State

    return State(db=str(tmp_path / "cli.db"), store_id=None, json=as_json, embed_url=None, embed_model=None,
                 embed_dim=None, store_strategy="hybrid", db_given=True)


def test_cli_without_llm_endpoint_is_a_clear_usage_error(tmp_path, monkeypatch):
    from oramem.cli.cmd_knowledge import knowledge

    monkeypatch.delenv("ORAMEM_LLM_BASE_URL", raising=False)
    monkeypatch.delenv("ORAMEM_LLM_MODEL", raising=False)
    res = CliRunner().invoke(knowledge, ["write", "a1", "I live in Lisbon", "--speaker", "Pedro"], obj=_state(tmp_path))
    assert res.exit_code == 2 and "ORAMEM_LLM_BASE_URL" in res.output


def test_cli_write_facts_entities_history(tmp_path, monkeypatch):
    from oramem.cli.cmd_knowledge import knowledge

    scripted = ScriptedLLM({
        "event_emotion": {"emotion": "neutral", "intensity": 0.1, "energy": "low"},
        "extract": extract([("Pedro", "person"), ("Lisbon", "place")], [("Pedro", "Pedro lives in Lisbon", "residence")],
                           [("Pedro", "Lisbon", "lives in")]),
    })
    srv = LLMServer(scripted)
    try:
        monkeypatch.setenv("ORAMEM_LLM_BASE_URL", srv.base_url)
        monkeypatch.setenv("ORAMEM_LLM_MODEL", "test-model")
        runner = CliRunner()
        st = _state(tmp_path)
        res = runner.invoke(knowledge, ["write", "a1", "I live in Lisbon", "--speaker", "Pedro"], obj=st)
        st.close()
        assert res.exit_code == 0, res.output
        assert "Pedro lives in Lisbon" in res.output and "lives_in" in res.output
        st = _state(tmp_path, as_json=True)
        res = runner.invoke(knowledge, ["facts", "a1"], obj=st)
        st.close()
        facts = json.loads(res.output)
        assert [f["fact_text"] for f in facts] == ["Pedro lives in Lisbon"] and facts[0]["status"] == "active"
        st = _state(tmp_path)
        res = runner.invoke(knowledge, ["entities", "a1"], obj=st)
        st.close()
        assert "place:lisbon" in res.output and "person:pedro" in res.output
        st = _state(tmp_path)
        res = runner.invoke(knowledge, ["history", "a1", facts[0]["fact_id"]], obj=st)
        st.close()
        assert res.exit_code == 0 and "Pedro lives in Lisbon" in res.output
    finally:
        srv.close()


def test_logger_never_logs_content_at_info(km, llm, caplog):
    llm.route("extract", extract([("Pedro", "person")], [("Pedro", "Pedro's secret is PINEAPPLE42")]))
    llm.route("event_emotion", RuntimeError("PINEAPPLE42 leaked?"))
    with caplog.at_level(logging.DEBUG, logger="oramem.knowledge"):
        km.write("a1", "my secret is PINEAPPLE42", "Pedro")
    assert all("PINEAPPLE42" not in r.getMessage() for r in caplog.records if r.levelno >= logging.INFO)


# -- the API key rules the provider shares with the embedders (oramem/_http.py) ------------


async def test_provider_sends_openai_key_only_to_openai(server, monkeypatch):
    """OPENAI_API_KEY is OpenAI's: it is never sent to another host (here a loopback server)."""
    monkeypatch.delenv("ORAMEM_LLM_API_KEY", raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai-secret")
    await OpenAICompatibleProvider(server.base_url, "m").complete_async(msgs())
    assert "Authorization" not in server.headers[-1]
    monkeypatch.setenv("ORAMEM_LLM_API_KEY", "sk-llm")
    await OpenAICompatibleProvider(server.base_url, "m").complete_async(msgs())
    assert server.headers[-1]["Authorization"] == "Bearer sk-llm"
    await OpenAICompatibleProvider(server.base_url, "m", api_key="sk-arg").complete_async(msgs())
    assert server.headers[-1]["Authorization"] == "Bearer sk-arg"


def test_provider_refuses_a_key_over_plain_http_to_another_host(monkeypatch):
    monkeypatch.delenv("ORAMEM_LLM_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(ValueError, match=r"refusing to send the LLM API key \(api_key\) in clear text over http to '10\.0\.0\.5'"):
        OpenAICompatibleProvider("http://10.0.0.5:8000/v1", "m", api_key="sk-x")
    monkeypatch.setenv("ORAMEM_LLM_API_KEY", "sk-env")
    with pytest.raises(ValueError, match="ORAMEM_LLM_API_KEY.*allow_insecure_key=True"):
        OpenAICompatibleProvider("http://llm.example.com/v1", "m")
    OpenAICompatibleProvider("http://llm.example.com/v1", "m", allow_insecure_key=True)  # opted in
    OpenAICompatibleProvider("https://llm.example.com/v1", "m")
    monkeypatch.delenv("ORAMEM_LLM_API_KEY")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai")
    OpenAICompatibleProvider("http://llm.example.com/v1", "m")  # OpenAI's key is not for this host: nothing to refuse


async def test_provider_key_is_never_logged_nor_in_errors(server, monkeypatch, caplog):
    monkeypatch.setenv("ORAMEM_LLM_API_KEY", "sk-never-logged-42")
    caplog.set_level(logging.DEBUG)  # every logger, httpx and httpcore included
    p = OpenAICompatibleProvider(server.base_url, "m", max_retries=1)
    p.backoff_base = 0.0
    await p.complete_async(msgs())
    p.complete(msgs())
    server.failures = [(500, "boom")] * 2
    with pytest.raises(LLMError) as info:
        await p.complete_async(msgs())
    assert server.headers[0]["Authorization"] == "Bearer sk-never-logged-42"
    assert "sk-never-logged" not in caplog.text
    assert "sk-never-logged" not in str(info.value) and "sk-never-logged" not in repr(p)


def test_cli_refuses_a_key_over_plain_http_unless_the_flag_is_given(tmp_path, monkeypatch):
    from oramem.cli.cmd_knowledge import knowledge

    monkeypatch.setenv("ORAMEM_LLM_BASE_URL", "http://10.0.0.5:8000/v1")
    monkeypatch.setenv("ORAMEM_LLM_MODEL", "m")
    monkeypatch.setenv("ORAMEM_LLM_API_KEY", "sk-cli-secret")
    res = CliRunner().invoke(knowledge, ["write", "a1", "I live in Lisbon", "--speaker", "Pedro"], obj=_state(tmp_path))
    assert res.exit_code == 2, res.output
    assert "ORAMEM_LLM_API_KEY" in res.output and "--llm-allow-http-key" in res.output
    assert "sk-cli-secret" not in res.output
    from oramem.cli.cmd_knowledge import _llm

    assert _llm("http://10.0.0.5:8000/v1", "m", 5.0, True).url == "http://10.0.0.5:8000/v1/chat/completions"
