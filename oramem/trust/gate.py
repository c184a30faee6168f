"""The firewall's place in the store's write path: screening checked record drafts (add,
restore) and update fields before the embedder or the engine sees them (SC-15)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping  # the abc's isinstance is ~3x faster than typing's alias (per record of an add)
from typing import Any, Optional, Sequence

from ..normalize import RecordDraft, _checked_metadata
from ..types import NOT_SET
from ..types import Record
from .firewall import VERDICT_KEY, FirewallPolicy, FirewallRejected, Screened, screen_record

__all__ = ["check_reserved", "drop_verdicts", "screen_drafts", "screen_update"]


def check_reserved(metadata: Any, argument: str = "metadata") -> None:
    """A caller may not write the verdict key: the firewall alone sets it (SC-15.4)."""
    items = metadata if isinstance(metadata, (list, tuple)) else [metadata]
    for i, md in enumerate(items):
        if isinstance(md, Mapping) and VERDICT_KEY in md:
            where = f"{argument}[{i}]" if isinstance(metadata, (list, tuple)) else argument
            raise ValueError(
                f"{where} has the key {VERDICT_KEY!r}, which is reserved for the write-time firewall's verdict; "
                "rename it (the firewall sets it on every record written under a policy)"
            )


def _reject(rejected: Sequence[tuple[int, str]], what: str, category_of: Mapping[str, str]) -> FirewallRejected:
    names = sorted({name for _, name in rejected})
    categories = sorted({category_of[name] for name in names})
    where = ", ".join(f"{what}[{i}]: {name}" for i, name in rejected[:10])
    more = f" and {len(rejected) - 10} more" if len(rejected) > 10 else ""
    return FirewallRejected(
        f"the store's firewall rejects {', '.join(categories)} content and found {', '.join(names)} "
        f"({where}{more}); nothing was written. Remove it from the text, or change the policy "
        f"(e.g. `oramem firewall set --{categories[0]} redact`, or store.set_firewall(...))",
        rejected,
    )


def _without_verdict(md: Optional[Mapping[str, Any]]) -> Optional[dict[str, Any]]:
    if md is None:
        return None
    return {k: v for k, v in md.items() if k != VERDICT_KEY}


def drop_verdicts(drafts: Sequence[RecordDraft]) -> list[RecordDraft]:
    """A restore's drafts without the verdict key a backup line carries (SC-15.4): a backup
    file is text anyone could have edited, so its ``{"trust": "high"}`` is a claim, not a
    screening; restored into a store without a policy, the record is stored as written, with
    no verdict (a restore with ``keep_verdicts=True`` is the operator vouching for the file)."""
    out: list[RecordDraft] = []
    for d in drafts:
        if isinstance(d.metadata, Mapping) and VERDICT_KEY in d.metadata:
            md, text = _checked_metadata(_without_verdict(d.metadata), "metadata")
            d = dataclasses.replace(d, metadata=md, metadata_json=text)
        out.append(d)
    return out


def _draft_texts(d: RecordDraft) -> tuple[list[Optional[str]], str]:
    """The draft's texts in a fixed order: content, then the index text or caller chunks."""
    if d.index is NOT_SET or d.index is None:
        return [d.content], "none"
    if isinstance(d.index, str):
        return [d.content, d.index], "str"
    return [d.content, *d.index], "chunks"


def screen_drafts(policy: FirewallPolicy, drafts: Sequence[RecordDraft], *, restoring: bool = False,
                  what: str = "contents") -> list[RecordDraft]:
    """The drafts as the policy lets them be stored (redacted, stamped with the verdict), or
    :class:`FirewallRejected` for the whole call when any record has a rejected finding.
    ``restoring``: records from a backup may carry an old verdict, which is replaced."""
    detectors = policy.active_detectors()
    category_of = {d.name: d.category for d in detectors}
    out: list[RecordDraft] = []
    rejected: list[tuple[int, str]] = []
    key_cache: dict[str, Any] = {}  # the records' metadata keys repeat: each is scanned once a call
    for i, d in enumerate(drafts):
        md = _without_verdict(d.metadata) if restoring else d.metadata
        texts, shape = _draft_texts(d)
        s: Screened = screen_record(policy, detectors, texts, md, d.role, key_cache)
        rejected.extend((i, name) for name in s.rejected)
        if rejected:
            continue
        content = s.texts[0]
        index: Any = d.index
        if shape == "str":
            index = s.texts[1]
        elif shape == "chunks":
            index = tuple(s.texts[1:])
        stamped, text = _checked_metadata(s.metadata, "metadata")
        out.append(dataclasses.replace(d, content=content, index=index, metadata=stamped, metadata_json=text))
    if rejected:
        raise _reject(rejected, what, category_of)
    return out


@dataclasses.dataclass
class UpdateFields:
    text: Any
    index_text: Any
    metadata: Any


def screen_update(policy: FirewallPolicy, current: Optional[Record], text: Any, index_text: Any,
                  metadata: Any) -> UpdateFields:
    """An update's ``text`` / ``index_text`` / ``metadata`` as the policy lets them be
    written, with the record's verdict recomputed over what it will hold (SC-15.5).
    ``current`` is the stored record (None: not found; the update then changes nothing and
    the fields go through unscreened-but-checked). Fields not given (``NOT_SET``) stay."""
    if current is None:
        return UpdateFields(text, index_text, metadata)
    detectors = policy.active_detectors()
    category_of = {d.name: d.category for d in detectors}
    new_texts: list[Optional[str]] = []
    if text is not NOT_SET:
        new_texts.append(text)
    # index_text: one text, None, or caller chunks (a list of texts, SC-4.5) screened each
    chunked = index_text is not NOT_SET and isinstance(index_text, (list, tuple))
    if chunked:
        new_texts.extend(index_text)
    elif index_text is not NOT_SET:
        new_texts.append(index_text)
    base_md = _without_verdict(current.metadata) if metadata is NOT_SET else metadata
    role = getattr(current, "role", None)  # MessageRecord has one
    s = screen_record(policy, detectors, new_texts, base_md, role)
    if s.rejected:
        raise _reject([(0, name) for name in s.rejected], "update", category_of)
    # what stays as stored counts towards the verdict too (a flag sticks; it is not rewritten)
    kept = [] if text is not NOT_SET else [current.content]
    kept_screen = screen_record(policy, detectors, kept, None, role) if kept else None
    md = dict(s.metadata or {})
    verdict = md[VERDICT_KEY]
    if kept_screen is not None:
        extra = set(kept_screen.findings)
        if extra:
            verdict["findings"] = sorted(set(verdict["findings"]) | extra)
            flagged_kept = any(policy.action(category_of[n]) == "flag" for n in extra)
            if flagged_kept:
                verdict["verdict"], verdict["trust"] = "flagged", "untrusted"
    it = iter(s.texts)
    new_text = next(it) if text is not NOT_SET else NOT_SET
    new_index: Any = NOT_SET
    if chunked:
        new_index = type(index_text)(it)
    elif index_text is not NOT_SET:
        new_index = next(it)
    return UpdateFields(new_text, new_index, md)


def screen_context(policy: FirewallPolicy, texts: Sequence[str], source: str) -> tuple[list[str], int]:
    """The context a knowledge-layer write sends to the LLM with its message
    (``recent_messages``: in a shared thread, other users' turns too) under the store's
    policy (SC-15.6), each text screened as the message is: a rejected category raises
    :class:`FirewallRejected` (``recent_messages[i]``), a redacted text is kept redacted, a
    flagged one is left out (the LLM would read its instructions while extracting the
    writer's knowledge). Returns the texts kept, in order, and how many were left out."""
    detectors = policy.active_detectors()
    kept: list[str] = []
    rejected: list[tuple[int, str]] = []
    left_out = 0
    for i, text in enumerate(texts):
        s = screen_record(policy, detectors, [text], {"source": source}, None)
        rejected += [(i, name) for name in s.rejected]
        if s.verdict == "flagged":
            left_out += 1
        else:
            kept.append(s.texts[0] or "")
    if rejected:
        raise _reject(rejected, "recent_messages", {d.name: d.category for d in detectors})
    return kept, left_out


#: the free-text fields of a deterministic knowledge write's items (``add_knowledge``): what
#: becomes fact, entity, alias and event text; types, keys and numbers are not text
_KNOWLEDGE_TEXT = {"facts": ("subject", "fact", "value"), "entities": ("name", "aliases"),
                   "relations": ("source", "target")}


def screen_knowledge(policy: FirewallPolicy, reply: Mapping[str, Any], source: str) -> tuple[dict[str, Any], Screened]:
    """A deterministic knowledge write's items (``add_knowledge`` and its one-item twins, as
    an extraction reply ``{"entities", "facts", "relations"}``) under the store's policy
    (SC-15.6), screened as one message: their free text (fact texts and values, subject,
    entity and alias names, relation ends). Returns a copy of the reply with the redacted
    texts and the screening (its verdict under ``metadata[VERDICT_KEY]``);
    :class:`FirewallRejected` when a rejected category matched."""
    out: dict[str, Any] = {key: [dict(item) for item in value] if isinstance(value, list) else value
                           for key, value in reply.items()}
    slots: list[tuple[dict[str, Any], str, Optional[int]]] = []
    texts: list[Optional[str]] = []
    structured: list[dict[str, Any]] = []  # facts whose value is JSON other than a string
    for key, names in _KNOWLEDGE_TEXT.items():
        for item in out.get(key) or ():
            for name in names:
                value = item.get(name)
                if isinstance(value, str):
                    slots.append((item, name, None))
                    texts.append(value)
                elif key == "facts" and name == "value" and isinstance(value, (dict, list)):
                    # any JSON: its strings and keys are screened as metadata's are (red29:
                    # a dict value, or a list of dicts, was stored past the policy)
                    structured.append(item)
                elif isinstance(value, list):
                    item[name] = list(value)
                    for index, x in enumerate(value):
                        if isinstance(x, str):
                            slots.append((item, name, index))
                            texts.append(x)
    values_key = "oramem_knowledge_values"
    metadata: dict[str, Any] = {"source": source}
    if structured:
        metadata[values_key] = [item["value"] for item in structured]
    s = _screen_one(policy, texts, metadata, "knowledge items")
    for (item, name, at), new in zip(slots, s.texts):
        if at is None:
            item[name] = new
        else:
            item[name][at] = new
    if structured:
        screened_md = s.metadata or {}
        for item, new in zip(structured, screened_md.pop(values_key)):
            item["value"] = new
    return out, s


def _screen_one(policy: FirewallPolicy, texts: Sequence[Optional[str]], metadata: Optional[Mapping[str, Any]],
                what: str) -> Screened:
    """``texts`` screened as one record (SC-15.6); :class:`FirewallRejected` naming ``what``
    when a rejected category matched."""
    detectors = policy.active_detectors()
    s = screen_record(policy, detectors, list(texts), metadata, None)
    if s.rejected:
        raise _reject([(0, name) for name in s.rejected], what, {d.name: d.category for d in detectors})
    return s


def screen_message(policy: FirewallPolicy, text: str, source: str, speaker: Optional[str] = None) -> Screened:
    """A knowledge-layer message under the store's policy (SC-15.6): the screened text and
    its verdict (``Screened.metadata[VERDICT_KEY]``); :class:`FirewallRejected` when a
    rejected category matched. ``source`` is the write's source label. ``speaker``: the
    write's speaker name, which goes to the LLM with the message and becomes a person
    entity, screened with it as one message (``Screened.texts[1]``; red29)."""
    return _screen_one(policy, [text] if speaker is None else [text, speaker], {"source": source}, "message")


def screen_note(policy: FirewallPolicy, text: str, what: str) -> str:
    """A note written into a knowledge row outside the write pipeline (``annotate_fact``'s
    annotation, ``fulfill_intention``'s outcome note) under the store's policy (SC-15.6):
    the text to store (redacted); :class:`FirewallRejected` when a rejected category
    matched, and also when the note is flagged, since the row carries no verdict: a
    flagged note is not stored. ``what`` names the argument in the error."""
    s = _screen_one(policy, [text], None, what)
    if s.verdict == "flagged":
        raise FirewallRejected(
            f"the store's firewall flagged {what} ({', '.join(s.findings)}); a note carries no verdict, so a "
            "flagged one is not stored and nothing was changed. Remove it from the text, or change the policy",
            [(0, name) for name in s.findings])
    return s.texts[0] or ""
