"""Compile a validated metadata filter (SC-9, :mod:`oramem.filters`) to SQL over the
JSON ``metadata`` column.

A field is read with ``json_type``/``json_extract`` and a bound JSON path
(``$."key"."sub"``) when no key on its way contains ``"``, ``\\`` or a control character,
and otherwise through ``json_each`` with a bound key (``key = :fN``): a quoted label in
SQLite's path syntax is compared with the key as written in the stored JSON text (which
the engine writes with ``ensure_ascii=False``, so only those characters are escaped), and
it has no escapes of its own. Either way keys and values are bound parameters; the SQL text
holds only fixed fragments and generated aliases.

Typing follows JSON, not SQLite: ``json_each.type`` tells ``true``/``false`` from
``1``/``0`` and ``"1"`` from ``1``; ``1`` equals ``1.0``; arrays compare element by
element (same order and length) and objects inside lists compare exactly (same key set),
recursively, so no text-canonicalisation of JSON is needed.

A field condition is always ``EXISTS``/``NOT EXISTS`` over the field's entry, so it is
never SQL NULL and ``NOT`` is a plain boolean negation: a negated test matches a record
whose field is missing (SC-9.2). Containers are only handed to ``json_each`` /
``json_array_length`` behind a ``CASE`` on their JSON type, because SQLite does not
short-circuit ``AND`` and a scalar text value is not valid JSON.

Depth and width stay within SQLite's parser stack (about 100 entries) and expression
depth (1000): a nested field is reached by one flat join chain of ``json_each`` from the
metadata column (``json_each(m) j1, json_each(<j1 object>) j2 ...``), not by subqueries
nested per level; an exact container value is checked node by node, each node by its own
flat chain; long lists of scalars (``$in``, ``$nin``, ``$array_contains(_any)``, exact
lists/objects of scalars) are bound once as a JSON text and compared with ``json_each``;
long ``AND``/``OR`` lists are parenthesised as balanced trees.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any, Callable, Optional

from ._sqlite import sqlite_double

__all__ = ["compile_filter"]

_INT64 = (-(2**63), 2**63 - 1)
_COMPARISONS = {"$gt": ">", "$gte": ">=", "$lt": "<", "$lte": "<="}
#: Lists longer than this are bound as one JSON text (keeps the SQL small and shallow).
_WIDE = 16
#: AND/OR lists longer than this become balanced trees (SQLite's expression depth limit).
_FLAT_JOIN = 16
#: SQLite's limits per statement: 32766 parameters, 65535 references to json_each.
_MAX_PARAMS = 30_000
_MAX_ALIASES = 30_000

#: Keys a quoted JSON path label can address (non-empty; no '"', '\\', control characters).
_PATH_SAFE = re.compile(r'^[^"\\\x00-\x1f]+$')

Step = tuple[Any, Optional[str]]  # (object key or array index, JSON type of the entry when it is entered)


def compile_filter(metadata_filter: Mapping[str, Any], column: str = "r.metadata") -> tuple[str, dict[str, Any]]:
    """Return ``(sql, params)``: a boolean SQL expression over ``column`` (trusted SQL
    naming a JSON-object-or-NULL column) and its named parameters."""
    compiler = _Compiler(column)
    sql = compiler.document([], metadata_filter)
    if len(compiler.params) > _MAX_PARAMS or compiler.aliases > _MAX_ALIASES:
        raise ValueError(
            f"metadata_filter is too large for SQLite ({len(compiler.params)} values, {compiler.aliases} JSON "
            "lookups); use fewer conditions, or $in with a list instead of many $or branches"
        )
    return sql, compiler.params


def _join(parts: list[str], op: str) -> str:
    """``parts`` joined by ``op`` (AND/OR), as a balanced tree when long."""
    if not parts:
        return "1" if op == "AND" else "0"
    if len(parts) <= _FLAT_JOIN:
        return "(" + f" {op} ".join(parts) + ")"
    mid = len(parts) // 2
    return f"({_join(parts[:mid], op)} {op} {_join(parts[mid:], op)})"


def _json_type(value: Any) -> Optional[str]:
    if isinstance(value, (list, tuple)):
        return "array"
    if isinstance(value, Mapping):
        return "object"
    return None


def _has_nul(value: Any) -> bool:
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, (list, tuple)):
        return any(_has_nul(v) for v in value)
    if isinstance(value, Mapping):
        return any("\x00" in k or _has_nul(v) for k, v in value.items())
    return False


def _bindable_json(values: Any) -> bool:
    """Can this container of scalars be bound as one JSON text? SQLite's JSON functions
    cut strings at an escaped NUL, so such values are bound one by one instead."""
    items = values.values() if isinstance(values, Mapping) else values
    return all(_json_type(v) is None for v in items) and not _has_nul(values)


class _Compiler:
    def __init__(self, column: str) -> None:
        self.column = column
        self.params: dict[str, Any] = {}
        self._names: dict[tuple[str, Any], str] = {}
        self._aliases = 0

    # -- helpers -------------------------------------------------------------------------
    def bind(self, value: Any) -> str:
        """A named parameter for ``value``; equal values of one type share one (SQLite
        allows at most 32766 parameters per statement)."""
        key = (type(value).__name__, value)
        name = self._names.get(key)
        if name is None:
            name = self._names[key] = f"f{len(self.params)}"
            self.params[name] = value
        return f":{name}"

    def bind_json(self, value: Any) -> str:
        return self.bind(json.dumps(value, ensure_ascii=False, allow_nan=False))

    @property
    def aliases(self) -> int:
        return self._aliases

    def alias(self) -> str:
        self._aliases += 1
        return f"j{self._aliases}"

    @staticmethod
    def contents(alias: str, json_type: str) -> str:
        """The JSON text of a container entry, or NULL when it is not of ``json_type``."""
        return f"CASE WHEN {alias}.type = '{json_type}' THEN {alias}.value END"

    def walk(self, container: str, steps: list[Step], predicate: Callable[[str], str]) -> str:
        """``EXISTS`` a path of entries from the JSON ``container`` through ``steps`` whose
        last entry satisfies ``predicate``: one flat join chain, however long."""
        sources, conditions = [], []
        source = container
        last = ""
        for key, json_type in steps:
            last = self.alias()
            sources.append(f"json_each({source}) AS {last}")
            conditions.append(f"{last}.key = {self.bind(key)}")
            if json_type is not None:
                source = self.contents(last, json_type)
        conditions.append(f"({predicate(last)})")
        return f"EXISTS (SELECT 1 FROM {', '.join(sources)} WHERE {' AND '.join(conditions)})"

    def entry(self, path: list[str], key: Any, predicate: Callable[[str], str]) -> str:
        """``EXISTS`` the field ``key`` of the object at ``path`` (keys of nested objects
        from the metadata column) satisfying ``predicate``.

        Fast path: when no key on the way contains ``"``, ``\\`` or a control character
        (a quoted SQLite JSON path label matches the key's JSON-escaped form, which differs
        from the key for exactly those), the field is read with ``json_type`` /
        ``json_extract`` and a bound path, which SQLite answers from one cached parse of
        the document instead of a ``json_each`` scan per condition. Same semantics: the
        predicate sees the entry's JSON type and value, a missing field is false."""
        keys = list(path) + [key]
        if all(isinstance(k, str) and _PATH_SAFE.match(k) for k in keys):
            json_path = self.bind("$" + "".join(f'."{k}"' for k in keys))
            placeholder = self.alias()
            body = predicate(placeholder)
            json_type = f"json_type({self.column}, {json_path})"
            body = body.replace(f"{placeholder}.type", json_type).replace(
                f"{placeholder}.value", f"json_extract({self.column}, {json_path})"
            )
            return f"COALESCE(({json_type} IS NOT NULL AND ({body})), 0)"
        return self.walk(self.column, [(k, "object") for k in path] + [(key, None)], predicate)

    # -- filters -------------------------------------------------------------------------
    def document(self, path: list[str], flt: Mapping[str, Any]) -> str:
        return _join(self.conditions(path, flt), "AND")

    def conditions(self, path: list[str], flt: Mapping[str, Any]) -> list[str]:
        """The ANDed conditions of a filter on the object at ``path``; nested subset
        matches add theirs to the same flat list (no parenthesis per level)."""
        parts = []
        for key, condition in flt.items():
            if key in ("$and", "$or"):
                parts.append(_join([self.document(path, sub) for sub in condition], "AND" if key == "$and" else "OR"))
            elif isinstance(key, str) and key.startswith("$"):
                raise ValueError(f"metadata_filter: {key!r} is not a filter-level operator; use $and or $or")
            elif isinstance(condition, Mapping) and condition and not any(
                isinstance(k, str) and k.startswith("$") for k in condition
            ):
                # subset match: the field is an object, and each entry matches inside it
                parts.append(self.entry(path, key, lambda a: f"{a}.type = 'object'"))
                parts.extend(self.conditions(path + [key], condition))
            else:
                parts.append(self.field(path, key, condition))
        return parts

    def field(self, path: list[str], key: str, condition: Any) -> str:
        if isinstance(condition, Mapping) and condition:
            dollar = [isinstance(k, str) and k.startswith("$") for k in condition]
            if all(dollar):
                return _join([self.operator(path, key, op, arg) for op, arg in condition.items()], "AND")
            if any(dollar):
                raise ValueError(f"metadata_filter: {key!r} mixes operators with plain keys")
            return self.document(path, {key: condition})
        return self.entry(path, key, lambda a: self.equals(a, condition))

    def operator(self, path: list[str], key: str, op: str, arg: Any) -> str:
        if op == "$eq":
            return self.entry(path, key, lambda a: self.equals(a, arg))
        if op == "$ne":
            return "NOT " + self.entry(path, key, lambda a: self.equals(a, arg))
        if op in _COMPARISONS:
            return self.entry(path, key, lambda a: self.compare(a, _COMPARISONS[op], arg, op))
        if op in ("$in", "$nin"):
            found = self.entry(path, key, lambda a: self.any_equals(a, arg))
            return found if op == "$in" else "NOT " + found
        if op == "$exists":
            found = self.entry(path, key, lambda a: "1")
            return found if arg else "NOT " + found
        if op == "$array_contains":
            wanted = arg if isinstance(arg, list) else [arg]
            return self.entry(path, key, lambda a: f"{a}.type = 'array' AND " + self.contains_all(a, wanted))
        if op == "$array_contains_any":
            return self.entry(path, key, lambda a: f"{a}.type = 'array' AND " + self.element(a, arg))
        if op == "$not":
            return "NOT " + self.field(path, key, arg)
        raise ValueError(f"metadata_filter: unknown operator {op!r} on {key!r}")

    # -- value predicates on one json_each entry ----------------------------------------
    def element(self, alias: str, values: list[Any]) -> str:
        """Some element of the array entry ``alias`` equals one of ``values``."""
        inner = self.alias()
        return (
            f"EXISTS (SELECT 1 FROM json_each({self.contents(alias, 'array')}) AS {inner} "
            f"WHERE {self.any_equals(inner, values)})"
        )

    def contains_all(self, alias: str, values: list[Any]) -> str:
        """Every one of ``values`` equals some element of the array entry ``alias``."""
        if len(values) > _WIDE and _bindable_json(values):
            wanted, inner = self.alias(), self.alias()
            return (
                f"NOT EXISTS (SELECT 1 FROM json_each({self.bind_json(values)}) AS {wanted} WHERE NOT EXISTS "
                f"(SELECT 1 FROM json_each({self.contents(alias, 'array')}) AS {inner} "
                f"WHERE {self.same_entry(inner, wanted)}))"
            )
        return _join([self.element(alias, [v]) for v in values], "AND")

    def any_equals(self, alias: str, values: list[Any]) -> str:
        if not values:
            return "0"
        if len(values) > _WIDE and _bindable_json(values):
            other = self.alias()
            return (
                f"EXISTS (SELECT 1 FROM json_each({self.bind_json(values)}) AS {other} "
                f"WHERE {self.same_entry(alias, other)})"
            )
        return _join([f"({self.equals(alias, v)})" for v in values], "OR")

    @staticmethod
    def same_entry(alias: str, other: str) -> str:
        """JSON equality of two scalar ``json_each`` entries (``other`` from bound JSON)."""
        return (
            f"(CASE WHEN {other}.type IN ('integer', 'real') THEN {alias}.type IN ('integer', 'real') "
            f"AND {alias}.value = {other}.value "
            f"WHEN {other}.type = 'text' THEN {alias}.type = 'text' AND {alias}.value = {other}.value "
            f"ELSE {alias}.type = {other}.type END)"
        )

    def compare(self, alias: str, sql_op: str, value: Any, op: str) -> str:
        if isinstance(value, bool) or not isinstance(value, (int, float, str)):
            raise ValueError(f"metadata_filter: {op} takes a number or a string, got {value!r}")
        if isinstance(value, str):
            return f"{alias}.type = 'text' AND {alias}.value {sql_op} {self.bind(value)}"
        return f"{alias}.type IN ('integer', 'real') AND {alias}.value {sql_op} {self.bind(_number(value))}"

    def scalar_equals(self, alias: str, value: Any) -> str:
        if value is None:
            return f"{alias}.type = 'null'"
        if isinstance(value, bool):
            return f"{alias}.type = '{'true' if value else 'false'}'"
        if isinstance(value, (int, float)):
            return f"{alias}.type IN ('integer', 'real') AND {alias}.value = {self.bind(_number(value))}"
        if isinstance(value, str):
            return f"{alias}.type = 'text' AND {alias}.value = {self.bind(value)}"
        raise TypeError(f"metadata_filter: {type(value).__name__} values cannot be matched against JSON")

    def shape(self, alias: str, value: Any) -> tuple[str, bool]:
        """The test of a container entry's type and size (and, for a long container of
        scalars, of all its elements at once); True when that already covers the elements."""
        json_type = _json_type(value)
        assert json_type is not None, "shape() is only called for containers"
        contents = self.contents(alias, json_type)
        if json_type == "array":
            size = f"json_array_length({contents}) = {self.bind(len(value))}"
        else:
            size = f"(SELECT count(*) FROM json_each({contents})) = {self.bind(len(value))}"
        test = f"{alias}.type = '{json_type}' AND {size}"
        if len(value) > _WIDE and _bindable_json(value):
            wanted, inner = self.alias(), self.alias()
            test += (
                f" AND NOT EXISTS (SELECT 1 FROM json_each({self.bind_json(value)}) AS {wanted} WHERE NOT EXISTS "
                f"(SELECT 1 FROM json_each({contents}) AS {inner} "
                f"WHERE {inner}.key = {wanted}.key AND {self.same_entry(inner, wanted)}))"
            )
            return test, True
        return test, False

    def equals(self, alias: str, value: Any) -> str:
        """JSON equality of the entry ``alias`` with ``value`` (exact, recursive): lists
        in order, objects with the same key set; every node of a container value is
        checked through its own flat chain of entries from ``alias``."""
        root_type = _json_type(value)
        if root_type is None:
            return self.scalar_equals(alias, value)
        parts: list[str] = []

        def visit(node: Any, steps: list[Step]) -> None:
            node_type = _json_type(node)
            if node_type is None:
                parts.append(self.walk(self.contents(alias, root_type), steps, lambda a: self.scalar_equals(a, node)))
                return
            covered = False
            if not steps:
                test, covered = self.shape(alias, node)
                parts.append(test)
            else:
                box: list[bool] = []

                def container_test(a: str) -> str:
                    test, done = self.shape(a, node)
                    box.append(done)
                    return test

                parts.append(self.walk(self.contents(alias, root_type), steps, container_test))
                covered = box[0]
            if covered:
                return
            items = node.items() if node_type == "object" else enumerate(node)
            for key, child in items:
                inner = steps[:-1] + [(steps[-1][0], node_type)] if steps else []
                visit(child, inner + [(key, None)])

        visit(value, [])
        return _join(parts, "AND")


def _number(value: Any) -> Any:
    """SQLite binds 64-bit integers; larger ones compare as the REAL SQLite parsed."""
    if isinstance(value, int) and not (_INT64[0] <= value <= _INT64[1]):
        return sqlite_double(value)  # SQLite reads the stored digits as a REAL
    if isinstance(value, float):
        return sqlite_double(value)  # the stored side is SQLite's parse of the JSON text too
    return value
