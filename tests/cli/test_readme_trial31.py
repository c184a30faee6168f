"""README claims a new user relied on in trial 31, tied to the code: the knowledge layer
without an LLM (the deterministic API was documented only in oramem/knowledge/STATUS.md),
the environment an MCP client gives `oramem mcp` (a new store made by the server silently
got the lexical HashEmbedder: the model variable of the user's shell never reached it), and
the CLI examples' order (`delete-thread t1` came after `forget --user alice`, which had
already erased t1, so it failed as written)."""

from __future__ import annotations

import contextlib
import io
import re
import shlex
from pathlib import Path

import pytest
from click.testing import CliRunner

from oramem.cli import cli

README = Path(__file__).resolve().parents[2] / "README.md"


def _readme() -> str:
    return README.read_text(encoding="utf-8")


def test_knowledge_without_an_llm_recipe_prints_what_its_comments_say():
    blocks = [b for b in re.findall(r"```python\n(.*?)```", _readme(), flags=re.S) if "KnowledgeMemory(facts_store, None)" in b]
    assert len(blocks) == 1, "the README lost its knowledge recipe without an LLM"
    block = blocks[0]
    out = io.StringIO()
    namespace: dict = {"__name__": "readme"}
    exec("from oramem import SQLiteMemoryStore\nfrom oramem.embedders import HashEmbedder\n"
         "from oramem.knowledge import KnowledgeMemory\n", namespace)
    with contextlib.redirect_stdout(out):
        exec(compile(block, "README.md knowledge-without-LLM block", "exec"), namespace)
    printed = out.getvalue().splitlines()
    expected = ["['Ana lives in Porto']", "[]", "Ana lives in Lisbon 2026-06-01", "['Ana lives in Lisbon']", "True"]
    assert printed == expected
    for line in expected:  # each printed value is the one its comment shows
        assert f"# {line}" in block
    for name in ("add_fact", "add_entity", "add_relation", "add_knowledge", "get_all", "history", "entities",
                 "relationships", "retrieve", "retract_fact", "forget"):
        from oramem.knowledge import KnowledgeMemory

        assert callable(getattr(KnowledgeMemory, name)) and f"`{name}`" in _readme()


_MCP_ENV = re.compile(r"the `mcp` SDK's stdio client with only\s+(.*?), so oramem's variables", flags=re.S)


def test_readme_says_which_environment_an_mcp_client_passes():
    section = _readme().split("### MCP server:", 1)[1].split("\n### ", 1)[0]
    assert '"env": {"ORAMEM_ONNX_MODEL"' in section
    named = _MCP_ENV.search(section)
    assert named, "the MCP section no longer says which variables a client passes"
    assert set(re.findall(r"`(\w+)`", named.group(1))) == {"HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER"}


def test_the_named_variables_are_the_mcp_sdks():
    stdio = pytest.importorskip("mcp.client.stdio", reason="oramem[mcp] not installed")
    named = _MCP_ENV.search(_readme())
    assert named is not None
    assert set(re.findall(r"`(\w+)`", named.group(1))) == set(stdio.DEFAULT_INHERITED_ENV_VARS)
    # what a store's embedder depends on is not among them: it must be given in "env"
    assert not {"ORAMEM_ONNX_MODEL", "HF_ENDPOINT", "HF_HUB_OFFLINE", "XDG_CACHE_HOME"} & set(stdio.DEFAULT_INHERITED_ENV_VARS)


def test_the_cli_examples_about_alice_and_t1_run_in_their_order(tmp_path, monkeypatch):
    text = _readme()
    start = text.index("```sh\noramem demo ")
    block = text[start + len("```sh\n"): text.index("```", start + 6)]
    wanted = ("oramem add ", "echo ", "oramem delete-thread t1", "oramem forget --user alice")
    lines = [re.sub(r"\s{2,}#.*$", "", line) for line in block.splitlines() if line.startswith(wanted)]
    assert any("delete-thread t1" in line for line in lines) and any("forget --user alice" in line for line in lines)
    monkeypatch.setenv("ORAMEM_DB", str(tmp_path / "readme.db"))
    monkeypatch.setenv("ORAMEM_STRATEGY", "keyword")  # no model needed to run the examples
    runner = CliRunner()
    for line in lines:
        stdin = None
        if line.startswith("echo "):
            left, line = line.split("|", 1)
            stdin = shlex.split(left)[1] + "\n"
        words = shlex.split(line)
        assert words[0] == "oramem"
        result = runner.invoke(cli, words[1:], input=stdin, catch_exceptions=False)
        assert result.exit_code == 0, (line, result.output)


def test_readme_says_a_one_value_option_is_given_once(runner, tmp_path):
    text = " ".join(_readme().split())
    assert "an option that takes one value may be given once (`--user alice --user bob` is refused with exit 2" in text
    result = runner.invoke(cli, ["--db", str(tmp_path / "x.db"), "search", "x", "--user", "alice", "--user", "bob"])
    assert result.exit_code == 2


def test_readme_names_the_mcp_option_that_leaves_a_tool_out():
    from oramem.cli.cmd_serve import mcp

    section = " ".join(_readme().split("### MCP server:", 1)[1].split("\n### ", 1)[0].split())
    assert "`--disable-tool NAME` (repeatable; Python `build_server(..., disabled_tools=[\"forget\"])`)" in section
    assert any("--disable-tool" in getattr(p, "opts", []) and p.multiple for p in mcp.params)
