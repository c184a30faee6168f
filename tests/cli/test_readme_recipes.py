"""The README's Python recipes run as written (one session, in order), and its first
lines are the two commands the brief promises."""

from __future__ import annotations

import re
import warnings
from pathlib import Path

README = Path(__file__).resolve().parents[2] / "README.md"


def test_readme_starts_with_the_two_commands():
    head = README.read_text(encoding="utf-8").splitlines()[:4]
    assert head == ["```", "pip install . && oramem demo", "pip install '.[test]' && pytest", "```"]


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
