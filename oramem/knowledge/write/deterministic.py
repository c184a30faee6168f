"""Caller-given knowledge (``KnowledgeMemory.add_knowledge`` & co.): validation of the items and
their translation into the reply shape the extraction step produces, so that a deterministic
write goes through the same resolution, reconciliation, upsert and indexing as an LLM one."""
from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Optional

from ..text import parse_when

__all__ = ["build_reply", "event_lines", "event_text"]

_ENTITY_KEYS = {"name", "type", "aliases"}
_FACT_KEYS = {"subject", "fact", "subject_type", "attribute_key", "value", "valid_from", "confidence", "category", "ttl_days"}
_RELATION_KEYS = {"source", "target", "rel_type", "source_type", "target_type"}
_SELF = {"user", "me", "i", "myself", "eu", "mim", "yo", "mi", "je", "moi", "ich"}


def _items(value: Optional[list[Any]], what: str, allowed: set[str]) -> list[Mapping[str, Any]]:
    if value is None:
        return []
    if not isinstance(value, (list, tuple)):
        raise TypeError(f"{what} must be a list of dicts, got {type(value).__name__}")
    out = []
    for i, item in enumerate(value):
        if not isinstance(item, Mapping):
            raise TypeError(f"{what}[{i}] must be a dict, got {type(item).__name__}")
        unknown = sorted(str(k) for k in item if k not in allowed)
        if unknown:
            raise ValueError(f"{what}[{i}] has unknown key(s) {', '.join(unknown)}; allowed: {', '.join(sorted(allowed))}")
        out.append(item)
    return out


def _name(item: Mapping[str, Any], key: str, where: str) -> str:
    value = item.get(key)
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{where}.{key} must be a non-empty string")
    if key in ("name", "subject", "source", "target") and value.strip().lower() in _SELF:
        raise ValueError(f"{where}.{key} {value!r} is a self-reference; name the entity it stands for")
    return value.strip()


def _optional_str(item: Mapping[str, Any], key: str, where: str) -> Optional[str]:
    value = item.get(key)
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{where}.{key} must be a non-empty string when given")
    return value.strip()


def build_reply(entities: Optional[list[Any]], facts: Optional[list[Any]], relations: Optional[list[Any]]) -> dict[str, Any]:
    """Validate the items (every error before anything is stored) and return an extraction
    reply: ``{"entities": [...], "facts": [...], "relations": [...]}``."""
    ents: dict[str, dict[str, Any]] = {}

    def entity(name: str, etype: Optional[str], aliases: Optional[list[Any]] = None) -> None:
        entry = ents.setdefault(name.lower(), {"name": name})
        if etype is not None:
            if entry.get("type") not in (None, etype):
                raise ValueError(f"entity {name!r} is given two types: {entry['type']!r} and {etype!r}")
            entry["type"] = etype
        if aliases:
            entry.setdefault("aliases", []).extend(a for a in aliases if a not in entry.get("aliases", []))

    for i, e in enumerate(_items(entities, "entities", _ENTITY_KEYS)):
        where = f"entities[{i}]"
        aliases = e.get("aliases")
        if aliases is not None and (
            not isinstance(aliases, (list, tuple)) or not all(isinstance(a, str) and a.strip() for a in aliases)
        ):
            raise ValueError(f"{where}.aliases must be a list of non-empty strings")
        entity(_name(e, "name", where), _optional_str(e, "type", where), [a.strip() for a in aliases or []])
    out_facts: list[dict[str, Any]] = []
    for i, f in enumerate(_items(facts, "facts", _FACT_KEYS)):
        where = f"facts[{i}]"
        subject = _name(f, "subject", where)
        text = _name(f, "fact", where)
        entity(subject, _optional_str(f, "subject_type", where))
        fact: dict[str, Any] = {"subject": subject, "fact": text}
        attr = _optional_str(f, "attribute_key", where)
        if attr is not None:
            fact["attribute_key"] = attr
        if "value" in f and f["value"] is not None:
            try:
                json.dumps(f["value"], allow_nan=False)
            except (TypeError, ValueError):
                raise ValueError(f"{where}.value must be JSON-serialisable") from None
            fact["value"] = f["value"]
        if f.get("valid_from") is not None:
            fact["valid_from"] = parse_when(f["valid_from"], f"{where}.valid_from").isoformat()
        conf = f.get("confidence")
        if conf is not None:
            if isinstance(conf, bool) or not isinstance(conf, (int, float)) or not 0.0 <= float(conf) <= 1.0:
                raise ValueError(f"{where}.confidence must be a number between 0 and 1, got {conf!r}")
            fact["confidence"] = float(conf)
        category = _optional_str(f, "category", where)
        if category is not None:
            fact["category"] = category
        ttl = f.get("ttl_days")
        if ttl is not None:
            if isinstance(ttl, bool) or not isinstance(ttl, int) or ttl < 0:
                raise ValueError(f"{where}.ttl_days must be a non-negative integer, got {ttl!r}")
            fact["ttl_days"] = ttl
        out_facts.append(fact)
    out_rels: list[dict[str, Any]] = []
    for i, r in enumerate(_items(relations, "relations", _RELATION_KEYS)):
        where = f"relations[{i}]"
        src, tgt = _name(r, "source", where), _name(r, "target", where)
        rel_type = _name(r, "rel_type", where)
        if src.lower() == tgt.lower():
            raise ValueError(f"{where}: source and target are the same entity {src!r}")
        entity(src, _optional_str(r, "source_type", where))
        entity(tgt, _optional_str(r, "target_type", where))
        out_rels.append({"source": src, "target": tgt, "rel_type": rel_type})
    if not ents and not out_facts and not out_rels:
        raise ValueError("nothing to add: give at least one entity, fact or relation")
    return {"entities": list(ents.values()), "facts": out_facts, "relations": out_rels}


def event_lines(reply: Mapping[str, Any]) -> list[tuple[str, Optional[int]]]:
    """The lines of the event text that records a deterministic write, one per item, each with
    the index of the fact item it lists (``None`` for a relation or entity line). The event
    keeps them in its ``trace_json`` (KC-3.6 [ext], del48: a deleted fact's line leaves it)."""
    lines: list[tuple[str, Optional[int]]] = [(f"{f['subject']}: {f['fact']}", i) for i, f in enumerate(reply["facts"])]
    lines += [(f"{r['source']} —{r['rel_type']}→ {r['target']}", None) for r in reply["relations"]]
    mentioned = {f["subject"].lower() for f in reply["facts"]} | {
        n.lower() for r in reply["relations"] for n in (r["source"], r["target"])
    }
    lines += [("entity: " + e["name"] + (f" ({e['type']})" if e.get("type") else ""), None) for e in reply["entities"]
              if e["name"].lower() not in mentioned]
    return lines


def event_text(reply: Mapping[str, Any]) -> str:
    """The event text that records a deterministic write: one line per item."""
    return "\n".join(line for line, _ in event_lines(reply))
