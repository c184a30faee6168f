"""oramem.knowledge: conversation → knowledge graph over an oramem store
(KNOWLEDGE_CONTRACT.md). Entities, bi-temporal versioned facts, relationships and events,
extracted by an LLM, stored in ``<STORE_ID>_KG_*`` tables next to the store and indexed as
store records. What is built and what is not: ``STATUS.md`` in this folder.

    from oramem import SQLiteMemoryStore
    from oramem.knowledge import KnowledgeMemory, OpenAICompatibleProvider
    from oramem.embedders import HashEmbedder

    store = SQLiteMemoryStore("memory.db", embedder=HashEmbedder(384))
    llm = OpenAICompatibleProvider("http://localhost:11434/v1", "llama3.1")
    km = KnowledgeMemory(store, llm)
    r = km.write("agent-1", "I moved to Curitiba last week", "Pedro")
    for f in km.get_all("agent-1"):
        print(f.status, f.entity_key, f.fact_text)
"""

from .write.classify import classify_input, select_strategy
from .config import KnowledgeConfig
from .read.context import compress_context
from .llm.emotion import tag_event_emotion, tag_event_emotion_sync
from .db import install as install  # registers the knowledge tables with sqlite.admin.drop_store
from .errors import ConflictError, EmbeddingError, ExtractionError, KnowledgeError, LLMError, LLMReplyError, LLMTimeout
from .memory import KnowledgeMemory
from .write.run import detect_corrections
from .llm.providers import BaseLLMProvider, LLMProvider, LLMResult, OpenAICompatibleEmbedder, OpenAICompatibleProvider
from .write.relations import normalize_rel_type
from .read.run import MAX_QUERY_CHARS
from .read.scoring import compute_vitality, dynamic_importance, plan_retrieval, recency_score
from .text import estimate_tokens
from .types import *  # noqa: F401,F403
from .types import __all__ as _types_all

__all__ = [
    "KnowledgeMemory",
    "KnowledgeConfig",
    "KnowledgeError",
    "LLMError",
    "LLMTimeout",
    "LLMReplyError",
    "EmbeddingError",
    "ExtractionError",
    "ConflictError",
    "LLMProvider",
    "BaseLLMProvider",
    "LLMResult",
    "OpenAICompatibleProvider",
    "OpenAICompatibleEmbedder",
    "classify_input",
    "select_strategy",
    "normalize_rel_type",
    "detect_corrections",
    "estimate_tokens",
    "plan_retrieval",
    "compress_context",
    "recency_score",
    "dynamic_importance",
    "compute_vitality",
    "tag_event_emotion",
    "tag_event_emotion_sync",
    "MAX_QUERY_CHARS",
    *_types_all,
]
