"""Framework adapters (DESIGN "Adapters at the edge").

Each adapter is a module behind its own extra and is imported only when used:

========================================  ==============================  =====================
module                                    what it provides                extra
========================================  ==============================  =====================
``oramem.integrations.langgraph``         ``OramemStore`` (``BaseStore``)  ``oramem[langgraph]``
``oramem.integrations.openai_agents``     ``OramemSession`` (``Session``)  ``oramem[openai-agents]``
``oramem.integrations.mcp``               ``build_server`` (``oramem mcp``)  ``oramem[mcp]``
``oramem.integrations.langchain``         ``OramemVectorStore``,           ``oramem[langchain]``
                                          ``OramemRetriever``,
                                          ``OramemChatMessageHistory``
``oramem.integrations.lc_embeddings``     ``LangChainEmbedder``            ``oramem[langgraph]``
========================================  ==============================  =====================

Adapters call the public store API only, so they work on both engines.
"""

from __future__ import annotations

import importlib
import os
from typing import Any


def require(module: str, extra: str) -> Any:
    """Import ``module`` or fail with the install command of the extra that provides it."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:  # pragma: no cover - exercised only without the extra
        raise ImportError(
            f"this oramem adapter needs {module!r}; install it with: pip install 'oramem[{extra}]'"
        ) from exc


def check_scope_ids(*pairs: tuple[str, Any]) -> None:
    """The scope an adapter is constructed with (``("user_id", value)``, ...): each ``None`` or a
    str with a visible character (SC-2.2: an id of white space only is refused), checked before
    the adapter is built, the same way by every adapter."""
    for name, value in pairs:
        if value is not None and (not isinstance(value, str) or not value.strip()):
            raise ValueError(f"{name} must be a non-empty str (not only white space) or None, got {value!r}")


def check_store(store: Any, where: str) -> None:
    """``store`` is an oramem store (``SQLiteMemoryStore``, ``OracleDBMemoryStore``), checked
    when the adapter ``where`` is built: a path, another adapter or ``None`` would otherwise
    fail only at the first read or write, with an ``AttributeError`` (or a framework's own
    error) that does not say what to pass."""
    from ..store import IMemoryStore

    if isinstance(store, IMemoryStore):
        return
    got = f"{type(store).__name__} {store!r}" if isinstance(store, (str, bytes, os.PathLike)) else type(store).__name__
    if isinstance(store, (str, os.PathLike)):
        hint = f": open the file first and pass the store, SQLiteMemoryStore({os.fspath(store)!r})"
    elif any(hasattr(store, name) for name in ("as_retriever", "batch", "get_items", "add_messages")):
        hint = (": an adapter takes the oramem store itself, not another framework object or adapter "
                "(a LangChain vector store's retriever is vector_store.as_retriever())")
    else:
        hint = ""
    raise TypeError(
        f"{where} needs an oramem store (SQLiteMemoryStore or OracleDBMemoryStore), got {got}{hint}"
    )
