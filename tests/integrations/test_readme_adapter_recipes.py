"""The README's adapter recipes (fenced as ```python extra=NAME) run as written, each extra's
blocks in order in one session, when that extra is installed; otherwise skipped with the
install command printed."""

from __future__ import annotations

import importlib
import re
import warnings
from pathlib import Path

import pytest

from integrations.extras import MISSING

README = Path(__file__).resolve().parents[2] / "README.md"
#: the module whose import proves an extra is installed
EXTRA_MODULES = {
    "langgraph": "langgraph.store.base",
    "openai-agents": "agents",
    "mcp": "mcp.server.mcpserver",
    "langchain": "langchain_core",
}


def _blocks() -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for extra, block in re.findall(r"```python extra=([\w-]+)\n(.*?)```", README.read_text(encoding="utf-8"), flags=re.S):
        found.setdefault(extra, []).append(block)
    return found


def test_every_adapter_recipe_names_a_known_extra():
    assert set(_blocks()) == set(EXTRA_MODULES), "README adapter recipes and EXTRA_MODULES disagree"


@pytest.mark.parametrize("extra", sorted(EXTRA_MODULES))
def test_adapter_recipes_run(extra, capsys):
    try:
        importlib.import_module(EXTRA_MODULES[extra])
    except ImportError:
        MISSING[extra] = f"oramem[{extra}] not installed: pip install '.[{extra}]' to run its README recipe"
        pytest.skip(MISSING[extra])
    namespace: dict = {"__name__": "readme"}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for i, block in enumerate(_blocks()[extra]):
            try:
                exec(compile(block, f"README.md {extra} block {i + 1}", "exec"), namespace)
            except Exception as exc:  # pragma: no cover - the message names the block
                raise AssertionError(f"README {extra} block {i + 1} failed: {exc!r}\n{block}") from exc
    assert capsys.readouterr().out.strip(), "a recipe prints what it shows"
