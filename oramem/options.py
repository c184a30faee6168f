"""Per-store options: small named settings that layers above the record store keep with
the store (the write-time firewall's policy, the retrieval audit's switch, the erasure
log's salt).

An option is a name (``^[a-z][a-z0-9_.]{0,63}$``) and a JSON value (at most
:data:`MAX_OPTION_BYTES` bytes encoded). Engines persist them beside the store's catalog
row (SQLite: table ``oramem_store_options``; Oracle: ``ORAMEM_STORE_OPTIONS``), read them
in one call (:meth:`oramem.engine.Engine.get_options`) and drop them with the store.
Setting ``None`` removes an option.
"""

from __future__ import annotations

import json
import re
from typing import Any, Optional

__all__ = ["MAX_OPTION_BYTES", "check_option_name", "encode_option", "decode_options"]

#: the largest encoded value (a policy, a salt, a switch: never data)
MAX_OPTION_BYTES = 16000
_NAME = re.compile(r"^[a-z][a-z0-9_.]{0,63}$")


def check_option_name(name: Any) -> str:
    if not isinstance(name, str) or not _NAME.match(name):
        raise ValueError(
            f"option name {name!r} must match ^[a-z][a-z0-9_.]{{0,63}}$ (lower-case letters, digits, '_' and '.')"
        )
    return name


def encode_option(name: str, value: Any) -> Optional[str]:
    """The stored text of ``value`` (None: remove the option); a value JSON cannot carry
    exactly, or one over :data:`MAX_OPTION_BYTES`, is a ``ValueError`` before any write."""
    if value is None:
        return None
    try:
        text = json.dumps(value, ensure_ascii=False, allow_nan=False, sort_keys=True, separators=(",", ":"))
    except (TypeError, ValueError) as e:
        raise ValueError(f"option {name!r}: the value must be JSON (dict, list, str, int, float, bool): {e}") from None
    if len(text.encode("utf-8")) > MAX_OPTION_BYTES:
        raise ValueError(f"option {name!r}: the value is over {MAX_OPTION_BYTES} bytes as JSON; options hold settings, not data")
    return text


def decode_options(rows: Any) -> dict[str, Any]:
    """``{name: value}`` from ``(name, stored text)`` rows."""
    return {str(name): json.loads(text) for name, text in rows}
