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
from typing import Any


def require(module: str, extra: str) -> Any:
    """Import ``module`` or fail with the install command of the extra that provides it."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:  # pragma: no cover - exercised only without the extra
        raise ImportError(
            f"this oramem adapter needs {module!r}; install it with: pip install 'oramem[{extra}]'"
        ) from exc
