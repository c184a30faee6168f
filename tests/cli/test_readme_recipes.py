"""The README's Python recipes run as written (one session, in order), and its first
lines are the two commands the brief promises."""

from __future__ import annotations

import re
import warnings
from pathlib import Path

README = Path(__file__).resolve().parents[2] / "README.md"


def test_readme_starts_with_the_two_commands():
    head = README.read_text(encoding="utf-8").splitlines()[:4]
    assert head == [
        "```",
        # a virtualenv first: a Debian/Ubuntu system Python refuses pip install (PEP 668, new-user trial F-7)
        "python3 -m venv .venv && . .venv/bin/activate && pip install . && oramem demo",
        "pip install '.[test]' && pytest",
        "```",
    ]


ORACLE_BLOCKS = re.compile(r"```python oracle\n(.*?)```", flags=re.S)


def test_oracle_recipes_compile_and_are_not_run():
    """Blocks fenced ```python oracle need a database: the recipe run below skips them
    (its pattern only matches a bare ```python fence); here they must at least compile and
    import only names that exist."""
    import importlib

    blocks = ORACLE_BLOCKS.findall(README.read_text(encoding="utf-8"))
    assert len(blocks) >= 3, "the README's Oracle section lost its Python examples"
    for i, block in enumerate(blocks):
        compile(block, f"README.md oracle block {i + 1}", "exec")
        for mod, names in re.findall(r"^from ([\w.]+) import (.+)$", block, flags=re.M):
            m = importlib.import_module(mod)
            for name in (n.strip() for n in names.split(",")):
                assert hasattr(m, name), f"oracle block {i + 1}: {mod} has no {name}"


def test_python_recipes_run(capsys):
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), flags=re.S)
    assert len(blocks) >= 12
    namespace: dict = {"__name__": "readme"}
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a recipe must not trigger warnings
        for i, block in enumerate(blocks):
            try:
                exec(compile(block, f"README.md python block {i + 1}", "exec"), namespace)
            except Exception as exc:  # pragma: no cover - the message names the block
                raise AssertionError(f"README python block {i + 1} failed: {exc!r}\n{block}") from exc
    out = capsys.readouterr().out
    assert "dark roast coffee" in out and "async works too" in out
