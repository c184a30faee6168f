"""Compile a validated metadata filter (SC-9, :mod:`oramem.filters`) to SQL over the
JSON ``metadata`` column.

Every field is reached with ``json_each`` and a bound key (``key = :fN``), never a JSON
path: SQLite's path syntax cannot address every key (a ``"`` inside a quoted path label
has no escape), and a bound key keeps user text out of the SQL string entirely. Values
are bound too; the SQL text holds only fixed fragments and generated aliases.

Typing follows JSON, not SQLite: ``json_each.type`` tells ``true``/``false`` from
``1``/``0`` and ``"1"`` from ``1``; ``1`` equals ``1.0``; arrays compare element by
element (same order and length) and objects inside lists compare exactly (same key set),
recursively, so no text-canonicalisation of JSON is needed.

A field condition is always ``EXISTS``/``NOT EXISTS`` over the field's entry, so it is
never SQL NULL and ``NOT`` is a plain boolean negation: a negated test matches a record
whose field is missing (SC-9.2). Containers are only handed to ``json_each`` /
``json_array_length`` behind a ``CASE`` on their JSON type, because SQLite does not
short-circuit ``AND`` and a scalar text value is not valid JSON.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping

__all__ = ["compile_filter"]

_INT64 = (-(2**63), 2**63 - 1)
_COMPARISONS = {"$gt": ">", "$gte": ">=", "$lt": "<", "$lte": "<="}


def compile_filter(metadata_filter: Mapping[str, Any], column: str = "r.metadata") -> tuple[str, dict[str, Any]]:
    """Return ``(sql, params)``: a boolean SQL expression over ``column`` (trusted SQL
    naming a JSON-object-or-NULL column) and its named parameters."""
    compiler = _Compiler()
    return compiler.document(column, metadata_filter), compiler.params


class _Compiler:
    def __init__(self) -> None:
        self.params: dict[str, Any] = {}
        self._aliases = 0

    # -- helpers -------------------------------------------------------------------------
    def bind(self, value: Any) -> str:
        name = f"f{len(self.params)}"
        self.params[name] = value
        return f":{name}"

    def alias(self) -> str:
        self._aliases += 1
        return f"j{self._aliases}"

    @staticmethod
    def contents(alias: str, json_type: str) -> str:
        """The JSON text of a container entry, or NULL when it is not of ``json_type``."""
        return f"CASE WHEN {alias}.type = '{json_type}' THEN {alias}.value END"

    def entry(self, document: str, key: Any, predicate: Callable[[str], str]) -> str:
        """``EXISTS`` an entry of ``document`` under ``key`` satisfying ``predicate``."""
        alias = self.alias()
        key_sql = self.bind(key)
        return (
            f"EXISTS (SELECT 1 FROM json_each({document}) AS {alias} "
            f"WHERE {alias}.key = {key_sql} AND ({predicate(alias)}))"
        )

    # -- filters -------------------------------------------------------------------------
    def document(self, document: str, flt: Mapping[str, Any]) -> str:
        parts = []
        for key, condition in flt.items():
            if key in ("$and", "$or"):
                joiner = " AND " if key == "$and" else " OR "
                subs = [self.document(document, sub) for sub in condition]
                parts.append("(" + joiner.join(subs) + ")" if subs else ("1" if key == "$and" else "0"))
            elif isinstance(key, str) and key.startswith("$"):
                raise ValueError(f"metadata_filter: {key!r} is not a filter-level operator; use $and or $or")
            else:
                parts.append(self.field(document, key, condition))
        return "(" + " AND ".join(parts) + ")" if parts else "1"

    def field(self, document: str, key: str, condition: Any) -> str:
        if isinstance(condition, Mapping) and condition:
            dollar = [isinstance(k, str) and k.startswith("$") for k in condition]
            if all(dollar):
                return "(" + " AND ".join(self.operator(document, key, op, arg) for op, arg in condition.items()) + ")"
            if any(dollar):
                raise ValueError(f"metadata_filter: {key!r} mixes operators with plain keys")
            return self.entry(
                document,
                key,
                lambda a: f"{a}.type = 'object' AND " + self.document(self.contents(a, "object"), condition),
            )
        return self.entry(document, key, lambda a: self.equals(a, condition))

    def operator(self, document: str, key: str, op: str, arg: Any) -> str:
        if op == "$eq":
            return self.entry(document, key, lambda a: self.equals(a, arg))
        if op == "$ne":
            return "NOT " + self.entry(document, key, lambda a: self.equals(a, arg))
        if op in _COMPARISONS:
            return self.entry(document, key, lambda a: self.compare(a, _COMPARISONS[op], arg, op))
        if op in ("$in", "$nin"):
            found = self.entry(document, key, lambda a: self.any_equals(a, arg))
            return found if op == "$in" else "NOT " + found
        if op == "$exists":
            found = self.entry(document, key, lambda a: "1")
            return found if arg else "NOT " + found
        if op == "$array_contains":
            wanted = arg if isinstance(arg, list) else [arg]
            return self.entry(
                document,
                key,
                lambda a: f"{a}.type = 'array' AND " + " AND ".join(self.element(a, [v]) for v in wanted),
            )
        if op == "$array_contains_any":
            return self.entry(document, key, lambda a: f"{a}.type = 'array' AND " + self.element(a, arg))
        if op == "$not":
            return "NOT " + self.field(document, key, arg)
        raise ValueError(f"metadata_filter: unknown operator {op!r} on {key!r}")

    # -- value predicates on one json_each entry ----------------------------------------
    def element(self, alias: str, values: list) -> str:
        """Some element of the array entry ``alias`` equals one of ``values``."""
        inner = self.alias()
        return (
            f"EXISTS (SELECT 1 FROM json_each({self.contents(alias, 'array')}) AS {inner} "
            f"WHERE {self.any_equals(inner, values)})"
        )

    def any_equals(self, alias: str, values: list) -> str:
        if not values:
            return "0"
        return "(" + " OR ".join(f"({self.equals(alias, v)})" for v in values) + ")"

    def compare(self, alias: str, sql_op: str, value: Any, op: str) -> str:
        if isinstance(value, bool) or not isinstance(value, (int, float, str)):
            raise ValueError(f"metadata_filter: {op} takes a number or a string, got {value!r}")
        if isinstance(value, str):
            return f"{alias}.type = 'text' AND {alias}.value {sql_op} {self.bind(value)}"
        return f"{alias}.type IN ('integer', 'real') AND {alias}.value {sql_op} {self.bind(_number(value))}"

    def equals(self, alias: str, value: Any) -> str:
        """JSON equality of the entry ``alias`` with ``value`` (exact, recursive)."""
        if value is None:
            return f"{alias}.type = 'null'"
        if isinstance(value, bool):
            return f"{alias}.type = '{'true' if value else 'false'}'"
        if isinstance(value, (int, float)):
            return f"{alias}.type IN ('integer', 'real') AND {alias}.value = {self.bind(_number(value))}"
        if isinstance(value, str):
            return f"{alias}.type = 'text' AND {alias}.value = {self.bind(value)}"
        if isinstance(value, (list, tuple)):
            array = self.contents(alias, "array")
            parts = [f"{alias}.type = 'array'", f"json_array_length({array}) = {self.bind(len(value))}"]
            parts += [self.entry(array, index, lambda a, v=item: self.equals(a, v)) for index, item in enumerate(value)]
            return " AND ".join(parts)
        if isinstance(value, Mapping):
            obj = self.contents(alias, "object")
            parts = [f"{alias}.type = 'object'", f"(SELECT count(*) FROM json_each({obj})) = {self.bind(len(value))}"]
            parts += [self.entry(obj, k, lambda a, v=item: self.equals(a, v)) for k, item in value.items()]
            return " AND ".join(parts)
        raise TypeError(f"metadata_filter: {type(value).__name__} values cannot be matched against JSON")


def _number(value: Any) -> Any:
    """SQLite binds 64-bit integers; larger ones compare as the REAL SQLite parsed."""
    if isinstance(value, int) and not (_INT64[0] <= value <= _INT64[1]):
        return float(value)
    return value
