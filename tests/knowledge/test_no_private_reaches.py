"""The knowledge modules share state through ``KnowledgeMemory.runtime`` (a ``KnowledgeRuntime``),
never by reaching into another object's private attributes (issue: architecture review, 59
reaches into ``KnowledgeMemory``). Checked on the source: any ``x._name`` where ``x`` is not
``self``/``cls`` fails."""

from __future__ import annotations

import ast
from pathlib import Path

import oramem.knowledge

PACKAGE = Path(oramem.knowledge.__file__).parent


def private_reaches(source: str) -> list[tuple[int, str]]:
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Attribute):
            continue
        name = node.attr
        if not name.startswith("_") or (name.startswith("__") and name.endswith("__")):
            continue
        if isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"):
            continue
        found.append((node.lineno, f"{ast.unparse(node.value)}.{name}"))
    return found


def test_the_checker_finds_a_reach():
    assert private_reaches("def f(km):\n    return km._tables\n") == [(2, "km._tables")]
    assert private_reaches("class A:\n    def f(self):\n        return self._x, self.km._y\n") == [(3, "self.km._y")]


def test_no_knowledge_module_reaches_into_private_attributes():
    offenders = {
        str(path.relative_to(PACKAGE)): reaches
        for path in sorted(PACKAGE.rglob("*.py"))
        if (reaches := private_reaches(path.read_text(encoding="utf-8")))
    }
    assert offenders == {}


def test_no_knowledge_module_reaches_into_the_store_engine():
    """Issue 25 item 3: the layer uses the public store API (``store.sql_access()``,
    ``store.register_erasure``, ``store.async_only``), never ``store.engine``."""
    offenders = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Attribute) and node.attr == "engine" and not ast.unparse(node.value).endswith("sa"):
                offenders.setdefault(str(path.relative_to(PACKAGE)), []).append((node.lineno, ast.unparse(node)))
    assert offenders == {}
