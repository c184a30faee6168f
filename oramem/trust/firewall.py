"""The write-time memory firewall (SC-15): a stage that screens every record before it
becomes durable.

Detectors find spans of text by category:

- ``secret``: provider API keys and tokens (OpenAI-style ``sk-``, Anthropic, AWS access
  key ids, GitHub, Slack, Google, Stripe), JSON Web Tokens, bearer tokens, private key
  blocks, ``password=...``-style assignments, and payment card numbers (Luhn-checked, with a
  card-network prefix);
- ``instruction``: text written to steer an agent rather than to inform it (requests to
  ignore earlier instructions, to reveal the system prompt, to hide things from the user,
  to send memories or credentials to an address, chat-template control tokens);
- ``pii``: e-mail addresses, phone numbers, US social security numbers, IBANs
  (mod-97-checked).

A :class:`FirewallPolicy` gives each category an action: ``reject`` (the whole call fails
with :class:`FirewallRejected` before anything is written or embedded), ``redact`` (the
span is replaced by ``[REDACTED:<detector>]`` in the content, the index text and metadata
string values), ``flag`` (kept as written, marked untrusted) or ``allow``. The policy also
maps a record's *source* to a trust label. Every record written under a policy carries
the verdict in its metadata under :data:`VERDICT_KEY`::

    {"verdict": "clean" | "redacted" | "flagged",
     "findings": ["secret.openai_key", ...],      # detector names, never the matched text
     "source": "user", "trust": "high"}

so retrieval filters on it like any metadata (``{"oramem_firewall": {"trust": "high"}}``).

Detectors are pluggable: :func:`register_detector` adds one to this process under a name;
a policy lists the registered detectors it uses (``detectors=``), and a write under a
policy that names a detector this process has not registered fails (no check is ever
skipped silently).

The firewall runs in the Python store (both engines), before the embedder sees any text,
so a remote embedding service never receives a rejected or redacted secret. PL/SQL
applications that call ``oramem_store`` directly write past it (docs/trust.md).
"""

from __future__ import annotations

import dataclasses
import re
import threading
from dataclasses import dataclass, field
from types import MappingProxyType
from collections.abc import Mapping
from typing import Any, Callable, Iterable, Optional, Protocol, Sequence, runtime_checkable

from ..errors import ArgumentError, StoreError

__all__ = [
    "ACTIONS",
    "CATEGORIES",
    "VERDICT_KEY",
    "OPTION_NAME",
    "ROLE_SOURCES",
    "Detector",
    "Finding",
    "FirewallPolicy",
    "FirewallRejected",
    "PatternDetector",
    "Screened",
    "builtin_detectors",
    "register_detector",
    "registered_detectors",
    "scan",
]

ACTIONS = ("reject", "redact", "flag", "allow")
CATEGORIES = ("secret", "instruction", "pii")
#: the metadata key that carries a record's verdict (reserved: callers cannot write it)
VERDICT_KEY = "oramem_firewall"
#: the store option (oramem.options) that holds the policy
OPTION_NAME = "firewall"
_TRUST_LABEL = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,31}$")
_DETECTOR_NAME = re.compile(r"^[a-z][a-z0-9_]*\.[a-z0-9_.]{1,60}$")
#: message roles that name the same speaker as another role: LangChain's message types (its
#: chat history stores ``human``/``ai``, and a streamed chunk's class name) as the roles the
#: OpenAI Agents SDK and ``store.add(roles=...)`` use, so one policy rates one speaker the
#: same whichever adapter wrote it (SC-15.4). Only a source taken from the role is mapped;
#: the stored role and a metadata ``source`` stay as written.
ROLE_SOURCES: Mapping[str, str] = MappingProxyType({
    "human": "user", "ai": "assistant",
    "HumanMessageChunk": "user", "AIMessageChunk": "assistant", "SystemMessageChunk": "system",
    "ToolMessageChunk": "tool", "FunctionMessageChunk": "function", "ChatMessageChunk": "chat",
})


class FirewallRejected(StoreError, ValueError):
    """A record matched a detector whose category the store's policy rejects; nothing of
    the call was written. ``findings`` lists ``(record index, detector name)`` pairs (never
    the matched text)."""

    def __init__(self, message: str, findings: Sequence[tuple[int, str]]) -> None:
        super().__init__(message)
        self.findings = list(findings)


@dataclass(frozen=True)
class Finding:
    """One detected span: the detector's name and category and the span's offsets."""

    detector: str
    category: str
    start: int
    end: int


@runtime_checkable
class Detector(Protocol):
    """What a detector provides: a ``name`` (``<family>.<what>``, lower case), a
    ``category`` (one of :data:`CATEGORIES`) and ``spans(text)``, the ``(start, end)``
    offsets it finds in ``text``."""

    @property
    def name(self) -> str: ...

    @property
    def category(self) -> str: ...

    def spans(self, text: str) -> Iterable[tuple[int, int]]: ...


@dataclass(frozen=True)
class PatternDetector:
    """A detector from a regular expression: a match (or its group ``group``) is a span
    when ``check`` (if given) accepts the matched text."""

    name: str
    category: str
    pattern: re.Pattern[str]
    check: Optional[Callable[[str], bool]] = None
    group: int = 0

    def spans(self, text: str) -> Iterable[tuple[int, int]]:
        for m in self.pattern.finditer(text):
            start, end = m.span(self.group)
            if start < end and (self.check is None or self.check(text[start:end])):
                yield start, end


def _luhn(digits: str) -> bool:
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = ord(ch) - 48
        if i % 2:
            d *= 2
            if d > 9:
                d -= 9
        total += d
    return total % 10 == 0


def _card(text: str) -> bool:
    digits = re.sub(r"[ -]", "", text)
    if not 13 <= len(digits) <= 19 or len(set(digits)) == 1:
        return False
    # the card networks' prefixes: Visa 4, Mastercard 51-55 / 2221-2720, Amex 34/37,
    # Discover and others 6, Diners 30/36/38, JCB 35
    first2 = int(digits[:2])
    first4 = int(digits[:4])
    network = (
        digits[0] == "4" or 51 <= first2 <= 55 or 2221 <= first4 <= 2720 or first2 in (34, 37, 30, 36, 38, 35)
        or digits[0] == "6"
    )
    return network and _luhn(digits)


def _iban(text: str) -> bool:
    s = text.replace(" ", "")
    if not 15 <= len(s) <= 34:
        return False
    moved = s[4:] + s[:4]
    number = "".join(str(int(c, 36)) for c in moved)
    return int(number) % 97 == 1


_PLACEHOLDER = ("your", "my_", "example", "xxx", "***", "placeholder", "changeme", "redacted", "dummy", "secret")


def _secret_value(text: str) -> bool:
    """The value of a ``password=``-style assignment looks like a secret, not a placeholder
    (``<PASSWORD>``, ``your_password``, ``${DB_PASS}``) or an expression (``req.body.token``):
    it has letters and digits, or is 10+ characters with a symbol or with the scattered
    capitals of a random string."""
    if text[0] in "<{$[(" or text.startswith(("%(", "%s")) or text.lower().startswith(_PLACEHOLDER) or text.endswith(">"):
        return False
    if "." in text.strip(".") and all(part.isidentifier() for part in text.split(".")):
        return False  # an attribute path
    has_symbol = any(not c.isalnum() for c in text)
    upper = sum(c.isupper() for c in text)
    lower = sum(c.islower() for c in text)
    random_case = upper >= 4 and lower >= 4  # not camelCase (a variable name has few capitals)
    return _mixed(text) or (len(text) >= 10 and (has_symbol or random_case))


#: the names secret.assignment knows: a metadata key without one is no assignment's name
_ASSIGNMENT_NAME = re.compile(
    r"password|passwd|passphrase|api[_-]?key|secret[_-]?key|access[_-]?token|auth[_-]?token|client[_-]?secret", re.I)
#: a key block's body: after the BEGIN marker, up to the END marker (or the text's end)
_KEY_BODY = re.compile(r"-----BEGIN [^\n]*?-----(.*?)(?:-----END|\Z)", re.S)
#: line breaks written as escapes (a key block inside a JSON text: a LangGraph item's content)
_ESCAPED_BREAK = re.compile(r"\\[nrt]")


def _key_block(text: str) -> bool:
    """A private key block has a base64 body, not a sentence between its markers; on lines
    of its own (header lines such as ``Proc-Type:`` left out), on one line, or with its line
    breaks escaped as in a JSON text (red29: a block on one line or inside a JSON text was not
    found: its body was read after the END marker)."""
    m = _KEY_BODY.match(text)
    body = _ESCAPED_BREAK.sub("\n", m.group(1) if m else "")
    body = "".join(line.strip() for line in body.splitlines() if ":" not in line)
    clean = [c for c in body if not c.isspace()]
    b64 = sum(1 for c in clean if c.isalnum() or c in "+/=")
    return len(clean) >= 40 and b64 >= 0.95 * len(clean)


def _mixed(text: str) -> bool:
    """A token, not a word: it has a digit and a letter."""
    return any(c.isdigit() for c in text) and any(c.isalpha() for c in text)


_I = re.IGNORECASE
_BUILTIN: tuple[PatternDetector, ...] = (
    # -- secrets ----------------------------------------------------------------------
    PatternDetector("secret.private_key", "secret", re.compile(
        r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----[\s\S]*?(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|\Z)"),
        _key_block),
    PatternDetector("secret.anthropic_key", "secret", re.compile(r"\bsk-ant-[A-Za-z0-9]{2,8}-[A-Za-z0-9_-]{20,}")),
    PatternDetector("secret.openai_key", "secret",
                    re.compile(r"\bsk-(?!ant-)(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}"), _mixed),
    PatternDetector("secret.aws_access_key_id", "secret", re.compile(r"\b(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}\b")),
    PatternDetector("secret.github_token", "secret",
                    re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255})\b")),
    PatternDetector("secret.slack_token", "secret", re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}"), _mixed),
    PatternDetector("secret.google_api_key", "secret", re.compile(r"\bAIza[0-9A-Za-z_-]{35}(?![0-9A-Za-z_-])")),
    PatternDetector("secret.stripe_key", "secret", re.compile(r"\b(?:sk|rk|pk)_(?:live|test)_[0-9A-Za-z]{16,}\b")),
    PatternDetector("secret.jwt", "secret",
                    re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}")),
    PatternDetector("secret.bearer_token", "secret",
                    re.compile(r"\bbearer\s+([A-Za-z0-9._~+/-]{20,}=*)", _I), _mixed, group=1),
    # the name may end an identifier (DB_PASSWORD=) and be quoted (JSON, a dict literal: "password": "...")
    PatternDetector("secret.assignment", "secret", re.compile(
        r"(?<![A-Za-z0-9])(?:password|passwd|passphrase|api[_-]?key|secret[_-]?key|access[_-]?token|auth[_-]?token"
        r"|client[_-]?secret)[\"']?\s*[:=]\s*[\"']?([^\s\"',;]{6,})", _I), _secret_value, group=1),
    PatternDetector("secret.card_number", "secret", re.compile(r"(?<![\d-])\d(?:[ -]?\d){12,18}(?![\d-])"), _card),
    # -- instructions aimed at the agent -------------------------------------------------
    PatternDetector("instruction.override", "instruction", re.compile(
        r"\b(?:ignore|disregard|forget|override|bypass)\s+(?:(?:all|any|the|your|these|those|my|of)\s+){0,3}"
        r"(?:previous|prior|above|earlier|preceding|system|original|existing)\s+"
        r"(?:instructions?|prompts?|rules|directions|directives|guidelines|guardrails)", _I)),
    PatternDetector("instruction.reveal_prompt", "instruction", re.compile(
        r"\b(?:reveal|print|show|repeat|output|leak|dump)\s+(?:me\s+)?(?:your|the)\s+"
        r"(?:system|hidden|initial|original|developer)\s+(?:prompt|instructions|message)", _I)),
    PatternDetector("instruction.conceal", "instruction", re.compile(
        r"\b(?:do not|don't|never)\s+(?:tell|inform|reveal\s+to|mention\s+(?:this\s+|it\s+)?to|let)\s+the\s+user\b"
        r"|\bwithout\s+(?:telling|informing|notifying)\s+the\s+user\b", _I)),
    PatternDetector("instruction.exfiltrate", "instruction", re.compile(
        r"\b(?:send|forward|email|e-mail|post|upload|transmit)\s+(?:(?:all|the|your|every|my|of)\s+){0,3}"
        r"(?:conversations?|chat\s+history|memories|memory|credentials|passwords?|api\s+keys?|secrets|tokens)\s+"
        r"to\s+(?:https?://|[\w.+-]+@[\w-]+\.)", _I)),
    PatternDetector("instruction.jailbreak", "instruction", re.compile(
        r"\byou\s+are\s+now\s+(?:in\s+)?(?:developer\s+mode|god\s+mode|dan\b|jailbroken|unrestricted|unfiltered)"
        r"|\b(?:act|behave|respond)\s+as\s+(?:if\s+you\s+(?:have|had)\s+no\s+(?:rules|restrictions|guidelines)"
        r"|an?\s+(?:unrestricted|unfiltered|jailbroken)\b)", _I)),
    PatternDetector("instruction.chat_markup", "instruction", re.compile(
        r"<\|(?:im_start|im_end|system|endoftext)\|>|\[/?INST\]|<</?SYS>>")),
    # -- personal data --------------------------------------------------------------------
    PatternDetector("pii.email", "pii", re.compile(r"\b[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}\b")),
    # international (+CC ...) or North American ((415) 555-0132, 415-555-0132, 415.555.0132)
    PatternDetector("pii.phone", "pii", re.compile(
        r"(?<![\w+.-])(?:\+\d{1,3}[ .-]?(?:\(\d{1,4}\)[ .-]?|\d{1,4}[ .-])\d{2,4}[ .-]?\d{2,4}(?:[ .-]?\d{2,4})?"
        r"|\(\d{3}\)\s?\d{3}[ .-]\d{4}|\d{3}[.-]\d{3}[.-]\d{4})(?![\w-])(?! \d)")),
    PatternDetector("pii.us_ssn", "pii", re.compile(r"\b(?!000|666|9\d\d)\d{3}-(?!00)\d{2}-(?!0000)\d{4}\b")),
    PatternDetector("pii.iban", "pii", re.compile(r"\b[A-Z]{2}\d{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,4})?\b"), _iban),
)

_registry_lock = threading.Lock()
_registered: dict[str, Detector] = {}


def builtin_detectors() -> tuple[PatternDetector, ...]:
    """The built-in detectors (always active for their category unless the category's
    action is ``allow``)."""
    return _BUILTIN


def register_detector(detector: Detector) -> None:
    """Make ``detector`` available to policies of this process under ``detector.name``
    (``<family>.<what>``, not a built-in name); registering another object under a taken
    name is a ``ValueError``."""
    if not isinstance(detector, Detector):
        raise TypeError("a detector needs name, category and spans(text)")
    name, category = detector.name, detector.category
    if not isinstance(name, str) or not _DETECTOR_NAME.match(name):
        raise ValueError(f"detector name {name!r} must look like 'family.what' (lower case, digits, '_', '.')")
    if category not in CATEGORIES:
        raise ValueError(f"detector {name!r}: category must be one of {', '.join(CATEGORIES)}, got {category!r}")
    if any(d.name == name for d in _BUILTIN):
        raise ValueError(f"{name!r} is a built-in detector; choose another name")
    with _registry_lock:
        known = _registered.get(name)
        if known is not None and known is not detector:
            raise ValueError(f"another detector is registered as {name!r}")
        _registered[name] = detector


def registered_detectors() -> dict[str, Detector]:
    with _registry_lock:
        return dict(_registered)


@dataclass(frozen=True)
class FirewallPolicy:
    """A store's firewall policy (stored with the store: ``store.set_firewall(policy)``,
    ``oramem firewall set``).

    ``secret``, ``instruction``, ``pii``: the action for each category (``reject``,
    ``redact``, ``flag``, ``allow``). ``detectors``: names of registered custom detectors
    to run too. ``trust``: source label -> trust label; ``default_trust``: the label of
    other sources. A record's source is its metadata ``"source"`` when that is a string,
    else its role (messages; LangChain's ``human`` and ``ai`` are the sources ``user`` and
    ``assistant``, :data:`ROLE_SOURCES`, unless ``trust`` names the role itself), else ``"api"``. A flagged record's trust is
    ``"untrusted"``."""

    secret: str = "redact"
    instruction: str = "flag"
    pii: str = "allow"
    detectors: tuple[str, ...] = ()
    trust: Mapping[str, str] = field(default_factory=dict)
    default_trust: str = "unrated"

    def __post_init__(self) -> None:
        for category in CATEGORIES:
            action = getattr(self, category)
            if action not in ACTIONS:
                raise ValueError(f"firewall {category} action must be one of {', '.join(ACTIONS)}, got {action!r}")
        if isinstance(self.detectors, str) or not all(isinstance(d, str) for d in self.detectors):
            raise TypeError("detectors must be a list of registered detector names")
        object.__setattr__(self, "detectors", tuple(self.detectors))
        if not isinstance(self.trust, Mapping):
            raise TypeError("trust must map source labels to trust labels")
        for source, label in self.trust.items():
            for what, value in (("source", source), ("trust label", label)):
                if not isinstance(value, str) or not _TRUST_LABEL.match(value):
                    raise ValueError(f"firewall {what} {value!r} must be 1-32 letters, digits, '_', '.' or '-'")
        object.__setattr__(self, "trust", dict(self.trust))
        if not isinstance(self.default_trust, str) or not _TRUST_LABEL.match(self.default_trust):
            raise ValueError(f"default_trust {self.default_trust!r} must be 1-32 letters, digits, '_', '.' or '-'")

    def action(self, category: str) -> str:
        return str(getattr(self, category))

    def to_json(self) -> dict[str, Any]:
        return {
            "version": 1, "secret": self.secret, "instruction": self.instruction, "pii": self.pii,
            "detectors": list(self.detectors), "trust": dict(self.trust), "default_trust": self.default_trust,
        }

    @classmethod
    def from_json(cls, value: Any) -> "FirewallPolicy":
        if not isinstance(value, Mapping) or value.get("version") != 1:
            raise ValueError(f"not a firewall policy this version of oramem reads: {value!r}")
        unknown = set(value) - {f.name for f in dataclasses.fields(cls)} - {"version"}
        if unknown:
            raise ValueError(f"firewall policy has unknown fields {sorted(unknown)}: written by a newer oramem?")
        return cls(
            secret=value.get("secret", "redact"), instruction=value.get("instruction", "flag"),
            pii=value.get("pii", "allow"), detectors=tuple(value.get("detectors", ())),
            trust=dict(value.get("trust", {})), default_trust=value.get("default_trust", "unrated"),
        )

    def active_detectors(self) -> list[Detector]:
        """The detectors that run under this policy; a named detector this process has not
        registered is a ``StoreError`` (never skipped)."""
        registered = registered_detectors()
        missing = [d for d in self.detectors if d not in registered]
        if missing:
            raise StoreError(
                f"the store's firewall policy uses detector(s) {', '.join(missing)}, not registered in this process; "
                "call oramem.trust.register_detector(...) before writing, or remove them from the policy"
            )
        chosen: list[Detector] = list(_BUILTIN)
        chosen.extend(registered[d] for d in self.detectors)
        return [d for d in chosen if self.action(d.category) != "allow"]


def scan(text: str, detectors: Optional[Sequence[Detector]] = None) -> list[Finding]:
    """Every span the detectors (default: all built-ins) find in ``text``, in text order."""
    found: list[Finding] = []
    for det in _BUILTIN if detectors is None else detectors:
        for start, end in det.spans(text):
            if not (isinstance(start, int) and isinstance(end, int) and 0 <= start < end <= len(text)):
                raise ValueError(f"detector {det.name!r} returned a span outside the text: {(start, end)!r}")
            found.append(Finding(det.name, det.category, start, end))
    found.sort(key=lambda f: (f.start, -f.end, f.detector))
    return found


def _redact(text: str, findings: Sequence[Finding]) -> str:
    """``text`` with every finding's span replaced; overlapping spans merge (the first
    detector's name labels the merged span)."""
    out: list[str] = []
    pos = 0
    for f in findings:  # sorted by start
        if f.end <= pos:
            continue
        start = max(f.start, pos)
        out.append(text[pos:start])
        if start == f.start:
            out.append(f"[REDACTED:{f.detector}]")
        pos = f.end
    out.append(text[pos:])
    return "".join(out)


@dataclass
class Screened:
    """What the firewall made of one record: its texts after redaction, the verdict, and
    the findings that counted (names only)."""

    texts: list[Optional[str]]
    metadata: Optional[dict[str, Any]]
    verdict: str
    findings: list[str]
    rejected: list[str]


class _Screen:
    """One record's screening under a policy."""

    def __init__(self, policy: FirewallPolicy, detectors: Sequence[Detector],
                 key_cache: Optional[dict[str, list[Finding]]] = None) -> None:
        self.policy = policy
        self.detectors = detectors
        #: metadata keys' findings, shared by the records of one call (keys repeat)
        self.key_cache = key_cache
        #: a metadata entry {"password": "..."} is an assignment whose name is the key
        self.assignment = next((d for d in detectors if d.name == "secret.assignment"), None)
        self.names: set[str] = set()
        self.rejected: set[str] = set()
        self.flagged = False
        self.redacted = False

    def text(self, text: Optional[str], extra: Sequence[Finding] = (),
             found: Optional[list[Finding]] = None) -> Optional[str]:
        if not text:
            return text
        if found is None:
            found = scan(text, self.detectors)
        if extra:
            found = sorted([*found, *extra], key=lambda f: (f.start, -f.end, f.detector))
        to_redact = []
        for f in found:
            action = self.policy.action(f.category)
            self.names.add(f.detector)
            if action == "reject":
                self.rejected.add(f.detector)
            elif action == "redact":
                to_redact.append(f)
            elif action == "flag":
                self.flagged = True
        if to_redact:
            self.redacted = True
            return _redact(text, to_redact)
        return text

    def value(self, value: Any) -> Any:
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, list):
            return [self.value(v) for v in value]
        if isinstance(value, dict):
            # keys are text the record carries as well (red29: a key the policy rejects was
            # stored as given, under a "clean" verdict); a redacted key is renamed
            out: dict[Any, Any] = {}
            for k, v in value.items():
                key = self.key(k) if isinstance(k, str) else k
                if key in out:
                    raise ArgumentError(
                        f"two metadata keys become {key!r} once the firewall redacts them; nothing was written. "
                        "Rename the keys (a key should not hold a secret)")
                out[key] = self.text(v, self._keyed(k, v)) if isinstance(v, str) else self.value(v)
            return out
        return value


    def key(self, key: str) -> Optional[str]:
        """A metadata key as the policy lets it be stored (screened as a text)."""
        if self.key_cache is None:
            return self.text(key)
        found = self.key_cache.get(key)
        if found is None:
            found = self.key_cache[key] = scan(key, self.detectors)
        return self.text(key, found=found)

    def _keyed(self, key: Any, value: str) -> list[Finding]:
        """The secret a metadata entry holds as ``{"password": "..."}``: the assignment
        detector over ``key=value``, its spans moved onto the value (red29: only values were
        looked at, so the name that makes a value a password was never seen)."""
        if self.assignment is None or not isinstance(key, str) or not _ASSIGNMENT_NAME.search(key):
            return []
        shift = len(key) + 1
        return [Finding(f.detector, f.category, f.start - shift, f.end - shift)
                for f in scan(f"{key}={value}", [self.assignment]) if f.start >= shift]


def _role_source(policy: FirewallPolicy, role: str) -> str:
    """The source a message role names: the role itself when the policy rates it by name (a
    policy written for LangChain's ``{"human": "high"}`` keeps rating those turns, never
    silently falling to ``default_trust``), else its :data:`ROLE_SOURCES` alias, else the role."""
    return role if role in policy.trust else ROLE_SOURCES.get(role, role)


def screen_record(
    policy: FirewallPolicy, detectors: Sequence[Detector], texts: Sequence[Optional[str]],
    metadata: Optional[Mapping[str, Any]], role: Optional[str],
    key_cache: Optional[dict[str, list[Finding]]] = None,
) -> Screened:
    """Screen one record's texts (content, index text or caller chunks) and metadata string
    values and keys; the verdict goes into a copy of the metadata under :data:`VERDICT_KEY`.
    ``key_cache``: a dict the records of one call share (their keys' findings)."""
    s = _Screen(policy, detectors, key_cache)
    new_texts = [s.text(t) for t in texts]
    md = None if metadata is None else s.value(dict(metadata))
    source = metadata.get("source") if metadata is not None else None
    if not isinstance(source, str) or not _TRUST_LABEL.match(source):
        source = _role_source(policy, role) if isinstance(role, str) and _TRUST_LABEL.match(role) else "api"
    verdict = "flagged" if s.flagged else "redacted" if s.redacted else "clean"
    trust = "untrusted" if s.flagged else policy.trust.get(source, policy.default_trust)
    stamped = dict(md or {})
    stamped[VERDICT_KEY] = {"verdict": verdict, "findings": sorted(s.names),
                            "source": source, "trust": trust}
    return Screened(new_texts, stamped, verdict, sorted(s.names), sorted(s.rejected))
