"""Metadata filter validation (STORE_CONTRACT §9), shared by every engine.

A filter is a JSON object. Top-level entries are ANDed; ``$and``/``$or`` take non-empty
lists of filters. A field entry's value is:

- a scalar (str, int, float, bool, None) or a list: exact match (lists: same order and
  length);
- a dict whose keys all start with ``$``: an operator dict, its operators ANDed;
- a dict whose keys never start with ``$``: a nested filter on the sub-object (subset
  match: every entry must match, other keys of the object are ignored).

Field keys are literal object keys (``"a.b"`` is the key ``a.b``, not a path): nest dicts
to reach deeper fields. Operators:

========================  ============================================================
``$eq`` / ``$ne``         a scalar or list, exact (in)equality; ``$ne`` also matches a
                          missing field
``$gt`` ``$gte``          a number or a string; numbers compare with numbers, strings
``$lt`` ``$lte``          with strings (ISO dates compare as strings); never mixed
``$in`` / ``$nin``        a non-empty list of scalars; ``$nin`` matches a missing field
``$exists``               ``True`` / ``False``
``$array_contains``       a scalar, or a non-empty list of scalars that must all be in
                          the field's array
``$array_contains_any``   a non-empty list of scalars, at least one in the field's array
``$not``                  an operator dict or a raw exact value (scalar or list); matches
                          exactly when the inner expression does not, so a missing field
                          or a non-array field matches a negated test
========================  ============================================================

:func:`validate_filter` returns a validated deep copy (tuples become lists) or raises
``ValueError``/``TypeError`` naming the offending key. Engines compile the result to bound
SQL; they never see an unvalidated filter.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Optional

from .errors import ArgumentError, ArgumentTypeError

__all__ = ["validate_filter", "filter_key", "known_filter_key", "remember_filter_key", "FIELD_OPERATORS", "LOGICAL_OPERATORS",
           "MAX_FILTER_DEPTH"]

FIELD_OPERATORS = frozenset(
    {
        "$eq",
        "$ne",
        "$gt",
        "$gte",
        "$lt",
        "$lte",
        "$in",
        "$nin",
        "$exists",
        "$array_contains",
        "$array_contains_any",
        "$not",
    }
)
LOGICAL_OPERATORS = frozenset({"$and", "$or"})
#: Guard against pathological nesting (each level becomes SQL).
MAX_FILTER_DEPTH = 32


def validate_filter(metadata_filter: Any) -> dict[str, Any]:
    """Validate an SC-9 filter and return a normalised deep copy."""
    if not isinstance(metadata_filter, Mapping):
        raise ArgumentTypeError(
            f"metadata_filter must be a dict (a JSON object), got {type(metadata_filter).__name__}"
        )
    return _filter(metadata_filter, path="", depth=0)


_KEY_SCALARS = (str, int, float, bool, type(None))


#: Nesting beyond which :func:`filter_key` gives up (None: not cached). A valid filter nests
#: at most 2 * MAX_FILTER_DEPTH levels (filters, then a value's lists and objects); a hostile
#: one is left to validate_filter, which names the problem, instead of a RecursionError here.
_KEY_MAX_DEPTH = 4 * MAX_FILTER_DEPTH


def filter_key(value: Any) -> Optional[tuple[Any, ...]]:
    """A hashable key that equals another filter's key only when both filters are the same
    JSON document (same keys in the same order, same values of the same JSON types: ``1``,
    ``1.0`` and ``True`` differ, and so do ``0.0`` and ``-0.0``), or None when the filter
    holds anything but plain dict/list/str/int/float/bool/None (subclasses included) or
    nests deeper than any valid filter, which is then never cached."""
    return _key(value, 0)


def _key(value: Any, depth: int) -> Optional[tuple[Any, ...]]:
    kind = type(value)
    if kind is dict or kind is list:
        if depth >= _KEY_MAX_DEPTH:
            return None
        subs = []
        if kind is dict:
            for k, v in value.items():
                if type(k) is not str:
                    return None
                sub = _key(v, depth + 1)
                if sub is None:
                    return None
                subs.append((k, sub))
            return ("d", tuple(subs))
        for v in value:
            sub = _key(v, depth + 1)
            if sub is None:
                return None
            subs.append(sub)
        return ("l", tuple(subs))
    if kind is float and value == 0.0:
        # 0.0 and -0.0 are equal and hash alike: the sign keeps them apart
        return ("float", value, math.copysign(1.0, value))
    if kind in _KEY_SCALARS:
        # the type name keeps 1, 1.0 and True apart (they are equal and hash alike)
        return (kind.__name__, value)
    return None


#: filter_key of validated filters that are never changed (the normaliser's shared ones), by
#: object identity; each entry holds its filter, so an id is not reused while it is here
_KEYS: dict[int, tuple[Any, Optional[tuple[Any, ...]]]] = {}
_KEYS_MAX = 1024


def remember_filter_key(metadata_filter: Any, key: Optional[tuple[Any, ...]]) -> None:
    """Record ``key`` as the :func:`filter_key` of ``metadata_filter``, an object that is
    never mutated afterwards (a validated filter shared between requests)."""
    if len(_KEYS) >= _KEYS_MAX:
        _KEYS.clear()
    _KEYS[id(metadata_filter)] = (metadata_filter, key)


def known_filter_key(metadata_filter: Any) -> Optional[tuple[Any, ...]]:
    """:func:`filter_key` of ``metadata_filter``, looked up when it was remembered."""
    found = _KEYS.get(id(metadata_filter))
    if found is not None and found[0] is metadata_filter:
        return found[1]
    return filter_key(metadata_filter)


def _where(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _filter(obj: Mapping[str, Any], path: str, depth: int) -> dict[str, Any]:
    if depth > MAX_FILTER_DEPTH:
        raise ArgumentError(f"metadata_filter nests deeper than {MAX_FILTER_DEPTH} levels at {path!r}")
    out: dict[str, Any] = {}
    for key, value in obj.items():
        if not isinstance(key, str):
            raise ArgumentTypeError(f"metadata_filter keys must be strings, got {key!r} at {path or 'top level'}")
        where = _where(path, key)
        if key in LOGICAL_OPERATORS:
            if path:
                raise ArgumentError(
                    f"metadata_filter: {key!r} is allowed only at the top level of a filter (found at {path!r})"
                )
            if not isinstance(value, (list, tuple)) or not value:
                raise ArgumentError(f"metadata_filter: {key!r} takes a non-empty list of filters")
            items = []
            for i, sub in enumerate(value):
                if not isinstance(sub, Mapping):
                    raise ArgumentTypeError(f"metadata_filter: {key}[{i}] must be a dict filter, got {type(sub).__name__}")
                items.append(_filter(sub, path="", depth=depth + 1))
            out[key] = items
        elif key.startswith("$"):
            raise ArgumentError(
                f"metadata_filter: unknown or misplaced operator {key!r}"
                + (f" at {path!r}" if path else "")
                + "; top-level operators are $and/$or, field operators go inside a field's dict"
            )
        elif key == "":
            raise ArgumentError("metadata_filter: empty field key")
        else:
            out[key] = _field_value(value, where, depth + 1)
    return out


def _field_value(value: Any, where: str, depth: int) -> Any:
    if isinstance(value, Mapping):
        keys = list(value.keys())
        if not keys:
            raise ArgumentError(
                f"metadata_filter: empty dict for {where!r}; use {{'$exists': True}} to test presence"
            )
        ops = [k for k in keys if isinstance(k, str) and k.startswith("$")]
        if ops and len(ops) != len(keys):
            plain = next(k for k in keys if not (isinstance(k, str) and k.startswith("$")))
            raise ArgumentError(
                f"metadata_filter: {where!r} mixes operators ({ops[0]!r}) with plain key {plain!r}; "
                "split them into separate conditions"
            )
        if ops:
            return _operators(value, where, depth)
        return _filter(value, path=where, depth=depth)
    return _exact(value, where)


def _operators(ops: Mapping[str, Any], where: str, depth: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for op, arg in ops.items():
        if op not in FIELD_OPERATORS:
            hint = " ($and/$or belong at the top level)" if op in LOGICAL_OPERATORS else ""
            raise ArgumentError(f"metadata_filter: unknown operator {op!r} for {where!r}{hint}")
        label = f"{where}.{op}"
        if op in ("$eq", "$ne"):
            out[op] = _exact(arg, label)
        elif op in ("$gt", "$gte", "$lt", "$lte"):
            out[op] = _comparable(arg, label)
        elif op in ("$in", "$nin", "$array_contains_any"):
            out[op] = _scalar_list(arg, label)
        elif op == "$array_contains":
            out[op] = _scalar_list(arg, label) if isinstance(arg, (list, tuple)) else _scalar(arg, label)
        elif op == "$exists":
            if not isinstance(arg, bool):
                raise ArgumentTypeError(f"metadata_filter: {label} takes True or False, got {arg!r}")
            out[op] = arg
        else:  # $not
            if isinstance(arg, Mapping):
                keys = list(arg.keys())
                if not keys or not all(isinstance(k, str) and k.startswith("$") for k in keys):
                    raise ArgumentError(
                        f"metadata_filter: {label} takes an operator dict (e.g. {{'$in': [...]}}) "
                        "or a raw value (scalar or list)"
                    )
                if depth > MAX_FILTER_DEPTH:
                    raise ArgumentError(f"metadata_filter nests deeper than {MAX_FILTER_DEPTH} levels at {label!r}")
                out[op] = _operators(arg, where, depth + 1)
            else:
                out[op] = _exact(arg, label)
    return out


def _scalar(value: Any, where: str) -> Any:
    if isinstance(value, int) and not isinstance(value, bool):
        try:
            float(value)
        except OverflowError:
            raise ArgumentError(f"metadata_filter: {where!r} has a number beyond the float range") from None
        return value
    if value is None or isinstance(value, (str, bool)):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ArgumentError(f"metadata_filter: {where!r} has a non-finite number {value!r}")
        return value
    raise ArgumentTypeError(
        f"metadata_filter: {where!r} takes a JSON scalar (str, int, float, bool, None), got {type(value).__name__}"
    )


def _comparable(value: Any, where: str) -> Any:
    if isinstance(value, bool) or value is None or not isinstance(value, (str, int, float)):
        raise ArgumentTypeError(f"metadata_filter: {where!r} compares numbers or strings only, got {value!r}")
    return _scalar(value, where)


def _scalar_list(value: Any, where: str) -> list[Any]:
    if not isinstance(value, (list, tuple)):
        raise ArgumentTypeError(f"metadata_filter: {where!r} takes a list, got {type(value).__name__}")
    if not value:
        raise ArgumentError(f"metadata_filter: {where!r} takes a non-empty list")
    return [_scalar(v, f"{where}[{i}]") for i, v in enumerate(value)]


def _exact(value: Any, where: str) -> Any:
    """A raw value matched exactly: a scalar, or a (nested) list of JSON values."""
    if isinstance(value, (list, tuple)):
        return [_json_value(v, f"{where}[{i}]", 1) for i, v in enumerate(value)]
    return _scalar(value, where)


def _json_value(value: Any, where: str, depth: int) -> Any:
    if isinstance(value, (list, tuple, Mapping)) and depth >= MAX_FILTER_DEPTH:
        raise ArgumentError(f"metadata_filter: the value at {where!r} nests deeper than {MAX_FILTER_DEPTH} levels")
    if isinstance(value, (list, tuple)):
        return [_json_value(v, f"{where}[{i}]", depth + 1) for i, v in enumerate(value)]
    if isinstance(value, Mapping):
        out = {}
        for k, v in value.items():
            if not isinstance(k, str):
                raise ArgumentTypeError(f"metadata_filter: {where!r} has a non-string key {k!r}")
            out[k] = _json_value(v, f"{where}.{k}", depth + 1)
        return out
    return _scalar(value, where)
