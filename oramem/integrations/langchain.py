"""LangChain: ``OramemVectorStore``, ``OramemRetriever`` and ``OramemChatMessageHistory``.

Install with ``pip install 'oramem[langchain]'``. All three call the public store API only
(both engines); the async methods use the store's native async API.

- ``OramemVectorStore(store, record_type="memory", user_id=None, agent_id=None,
  thread_id=None)``: a ``VectorStore``. One ``Document`` = one record: ``page_content`` is the
  content, ``metadata`` the record's metadata (``filter=`` is an oramem metadata filter),
  ``id`` the record id (``add_documents`` with an existing id replaces that record). The store's
  own embedder embeds (wrap a LangChain ``Embeddings`` in ``LangChainEmbedder`` to use one);
  ``similarity_search(..., strategy="keyword")`` picks a strategy the store supports;
  ``similarity_search_by_vector`` is the store's vector search for a given embedding. Scope
  given to the constructor is written on every record and limits every read (``None`` means
  records without one). Relevance score = ``1 - distance``.
- ``OramemRetriever(store=..., k=4, strategy=None, filter=None, record_types=None, user_id=...,
  agent_id=..., thread_id=...)``: a ``BaseRetriever`` over ``store.search``; ``invoke(query,
  k=...)`` overrides ``k`` per call.
- ``OramemChatMessageHistory(store, thread_id, user_id=None, agent_id=None)``: a
  ``BaseChatMessageHistory`` over the ``message`` records of the thread *in its scope*: the
  scope is written on every message and limits every read and ``clear()``, matched exactly
  (``None`` = messages without one), so two users with the same ``thread_id`` never see or
  clear each other's messages (the LangChain message is kept in
  ``metadata["langchain_message"]``; knowledge-layer event records are not messages).
  ``clear()`` deletes, in one transaction, every record of the scope in the thread; other
  users' and agents' records stay (``store.delete_thread`` removes a whole thread).

No keyword argument is dropped (red32): each method reads it or refuses it with a TypeError
naming it and what the method accepts, before anything is read or written; a scope name
(``user_id``, ``agent_id``, ``thread_id``) gets the answer that scope is fixed at construction.
LangChain's own pass-through keeps working: ``ids`` (``add_texts``/``add_documents``/
``from_documents``), ``as_retriever(search_kwargs=...)``, and ``verbose`` (a bool), which
``BaseRetriever.invoke`` reads for its callbacks and then hands on.

``OramemVectorStore.delete(ids)`` deletes the records of its scope among ``ids`` and returns
``True`` only when every id named a record of its scope (all deleted), else ``False`` (ids of
another scope, or unknown, are left alone). Its reads and deletes, in one transaction, go out
in sorted id order whatever the caller's order (on Oracle each read locks its row until the
transaction ends: one order for every caller, so two deletes cannot wait for each other);
``clear()`` deletes each record type's records in sorted id order too.
"""

from __future__ import annotations

from typing import Any, Iterable, Optional, Sequence

from . import check_scope_ids, check_store, require
from ._colour import call, run_async, run_async_in_transaction, run_sync, run_sync_in_transaction
from ..normalize import check_record_type
from ..types import SearchStrategy
from ..threads import write_refusal
from ..trust.firewall import VERDICT_KEY
from ._threads import ThreadScope

require("langchain_core", "langchain")

from langchain_core.callbacks import AsyncCallbackManagerForRetrieverRun, CallbackManagerForRetrieverRun  # noqa: E402
from langchain_core.chat_history import BaseChatMessageHistory  # noqa: E402
from langchain_core.documents import Document  # noqa: E402
from langchain_core.messages import BaseMessage, message_to_dict, messages_from_dict  # noqa: E402
from langchain_core.retrievers import BaseRetriever  # noqa: E402
from langchain_core.vectorstores import VectorStore  # noqa: E402
from pydantic import ConfigDict, model_validator  # noqa: E402

__all__ = ["OramemVectorStore", "OramemRetriever", "OramemChatMessageHistory"]

MESSAGE_KEY = "langchain_message"


def _scope_args(user_id: Optional[str], agent_id: Optional[str], thread_id: Optional[str]) -> dict[str, Any]:
    return {
        "user_id": user_id,
        "agent_id": agent_id,
        "thread_id": thread_id,
        "exact_user_match": True,
        "exact_agent_match": True,
        "exact_thread_match": True,
    }


def _search_plan(store_query: str, k: int, scope: dict, record_types, metadata_filter, strategy):
    kwargs: dict[str, Any] = dict(scope)
    if strategy is not None:
        kwargs["strategy"] = strategy
    hits = yield call("search", store_query, k=k, record_types=record_types, metadata_filter=metadata_filter, **kwargs)
    return [(Document(page_content=r.content or "", metadata=r.metadata or {}, id=r.id), d) for r, d in hits]


def _check_id_list(ids: Any) -> None:
    """``ids`` of ``delete`` / ``get_by_ids`` is a list: one str would be read as its characters'
    ids ("ab" deleting the records 'a' and 'b'; red27)."""
    if isinstance(ids, (str, bytes)):
        raise TypeError(f"ids must be a list of ids, got one {type(ids).__name__}: pass [{ids!r}] for that one record")


_SCOPE_NAMES = ("user_id", "agent_id", "thread_id")

# LangChain's own retrievers hand this on: ``invoke(query, verbose=True)`` reads it for the
# callback manager (langchain_core BaseRetriever.invoke) and then passes every keyword argument
# on, through VectorStoreRetriever's search_kwargs, to the search method. It is LangChain's to
# honour (a bool), not an option of the search.
_FRAMEWORK_FLAGS = ("verbose",)


def _refuse_unknown(where: str, kwargs: dict, accepts: Sequence[str], scope_of: str, *, framework: bool = False) -> None:
    """No keyword argument is dropped silently (red32): one the method does not read is a
    TypeError naming it and what the method accepts, raised before anything is read or written.
    A scope name (user_id, agent_id, thread_id) gets the answer that scope is fixed when the
    adapter is constructed: a call cannot narrow or widen it."""
    unknown = sorted(k for k in kwargs if not (framework and k in _FRAMEWORK_FLAGS))
    if framework:
        for flag in _FRAMEWORK_FLAGS:
            if flag in kwargs and not isinstance(kwargs[flag], bool):
                raise TypeError(f"{where}: {flag} must be a bool (LangChain's callback flag), got {kwargs[flag]!r}")
    if not unknown:
        return
    listed = ", ".join(accepts) if accepts else "no keyword arguments"
    message = f"{where} has no argument {', '.join(map(repr, unknown))}; it accepts {listed}"
    scoped = [k for k in unknown if k in _SCOPE_NAMES]
    if scoped:
        message += (
            f". The scope ({', '.join(_SCOPE_NAMES)}) is fixed when the {scope_of} is constructed and limits every "
            f"call: construct another {scope_of}(..., {scoped[0]}=...) for another scope"
        )
    raise TypeError(message)


def _read_back(meta: Optional[dict], existing: Any) -> Optional[dict]:
    """A Document's metadata for the upsert of its record: without the firewall's verdict
    when it is the one the record holds (SC-15.4: the key is the firewall's, and Documents
    this store returns carry it, so ``add_documents(get_by_ids(...))`` was refused on a store
    with a policy; red29). Any other verdict is left for the store to refuse."""
    if not meta or VERDICT_KEY not in meta or meta[VERDICT_KEY] != (existing.metadata or {}).get(VERDICT_KEY):
        return meta
    return {k: v for k, v in meta.items() if k != VERDICT_KEY}


# from_texts's own keyword arguments: the SQLite file, then the constructor's
_FROM_TEXTS_ACCEPTS = ("path", "record_type", "user_id", "agent_id", "thread_id")


class OramemVectorStore(VectorStore):
    def __init__(
        self,
        store: Any,
        *,
        record_type: str = "memory",
        user_id: Optional[str] = None,
        agent_id: Optional[str] = None,
        thread_id: Optional[str] = None,
    ) -> None:
        self._check_config(record_type, user_id, agent_id, thread_id)
        check_store(store, "OramemVectorStore")
        self._store = store
        self._type = record_type
        self._scope = {"user_id": user_id, "agent_id": agent_id, "thread_id": thread_id}

    @staticmethod
    def _check_config(record_type: Any, user_id: Any, agent_id: Any, thread_id: Any) -> None:
        """The constructor's checks, also run by :meth:`from_texts` before it probes the
        embedder or opens a SQLite file (a refused argument leaves no file behind)."""
        if record_type not in ("memory", "fact", "preference", "guideline"):
            raise ValueError(f"record_type must be memory, fact, preference or guideline, got {record_type!r}")
        check_scope_ids(("user_id", user_id), ("agent_id", agent_id), ("thread_id", thread_id))

    @property
    def embeddings(self) -> Any:
        embedder = getattr(self._store, "embedder", None)
        return getattr(embedder, "_embeddings", None)

    @classmethod
    def from_texts(cls, texts: list[str], embedding: Any, metadatas: Optional[list[dict]] = None, *, ids=None, **kwargs: Any):
        """A new in-memory SQLite vector store embedding with ``embedding``: a LangChain
        ``Embeddings``, or an oramem embedder (``HashEmbedder(256)``, ``ONNXEmbedder(...)``), used
        as it is. ``path`` (default ``":memory:"``) is the SQLite file; ``record_type``,
        ``user_id``, ``agent_id`` and ``thread_id`` go to the constructor. Any other keyword
        argument, or an ``embedding`` that is neither, is refused before the embedder is probed
        or a store is opened."""
        from .. import SQLiteMemoryStore
        from ..embedders.base import IEmbedder
        from .lc_embeddings import LangChainEmbedder

        _refuse_unknown("from_texts", {k: v for k, v in kwargs.items() if k not in _FROM_TEXTS_ACCEPTS},
                        ("metadatas", "ids") + _FROM_TEXTS_ACCEPTS, "OramemVectorStore")
        cls._check_config(kwargs.get("record_type", "memory"), kwargs.get("user_id"), kwargs.get("agent_id"),
                          kwargs.get("thread_id"))
        if isinstance(embedding, IEmbedder):
            embedder: IEmbedder = embedding
        elif callable(getattr(embedding, "embed_query", None)) and callable(getattr(embedding, "embed_documents", None)):
            embedder = LangChainEmbedder(embedding, len(embedding.embed_query("dimension probe")))
        else:
            raise TypeError(
                f"embedding must be a LangChain Embeddings (with embed_documents and embed_query) or an oramem "
                f"embedder (oramem.embedders, e.g. HashEmbedder(256)), got {type(embedding).__name__}"
            )
        made = cls(SQLiteMemoryStore(kwargs.pop("path", ":memory:"), embedder=embedder), **kwargs)
        made.add_texts(texts, metadatas, ids=ids)
        return made

    # -- plans ---------------------------------------------------------------------------------
    def _add_plan(self, texts: Iterable[str], metadatas: Optional[list[dict]], ids: Optional[Sequence[Optional[str]]]):
        texts = list(texts)
        metas: list[Optional[dict]] = list(metadatas) if metadatas is not None else [None] * len(texts)
        ids = list(ids) if ids is not None else [None] * len(texts)
        if len(metas) != len(texts) or len(ids) != len(texts):
            raise ValueError("metadatas and ids must have one entry per text")
        # one id per text, at the text's position (LangChain's add_texts: "List of ids from adding
        # the texts"): an updated record's id where its text is, a new record's where its text is
        out: list[Optional[str]] = [None] * len(texts)
        new_texts, new_meta, new_ids, new_at = [], [], [], []
        for at, (text, meta, rid) in enumerate(zip(texts, metas, ids)):
            if rid is not None:
                existing = yield call("get", self._type, rid)
                if existing is not None:
                    if (existing.user_id, existing.agent_id, existing.thread_id) != tuple(self._scope.values()):
                        raise ValueError(f"id {rid!r} is taken by a record of another scope; choose another id")
                    yield call("update", self._type, rid, text=text, metadata=_read_back(meta, existing) or None)
                    out[at] = rid
                    continue
            new_texts.append(text)
            new_meta.append(meta or None)
            new_ids.append(rid)
            new_at.append(at)
        if new_texts:
            if self._scope["thread_id"] is not None:
                # a user's documents may not be her first records in a thread of shared records
                # only (SC-13.5, oramem.threads): her erasure would take that thread whole
                refusal = yield from write_refusal(self._scope["thread_id"], self._scope["user_id"], self._scope["agent_id"])
                if refusal is not None:
                    raise ValueError(refusal)
            added = yield call(
                "add",
                new_texts,
                self._type,
                record_ids=new_ids,
                metadata=new_meta,
                user_ids=self._scope["user_id"],
                agent_ids=self._scope["agent_id"],
                thread_ids=self._scope["thread_id"],
            )
            for at, rid in zip(new_at, added):
                out[at] = rid
        return [rid for rid in out if rid is not None]

    def _get_plan(self, ids: Sequence[str]):
        _check_id_list(ids)
        docs = []
        for rid in ids:
            record = yield call("get", self._type, rid)
            if record is not None and (record.user_id, record.agent_id, record.thread_id) == tuple(self._scope.values()):
                docs.append(Document(page_content=record.content or "", metadata=record.metadata or {}, id=record.id))
        return docs

    def _delete_plan(self, ids: Optional[Sequence[str]]):
        if ids is None:
            raise ValueError("delete needs ids (deleting everything is not supported here; use store.delete_thread)")
        _check_id_list(ids)
        ids = list(ids)
        bad = [i for i in ids if not isinstance(i, str)]
        if bad:
            raise TypeError(f"delete ids must be strings (record ids), got {bad[0]!r}")
        # each id once (a repeat is not a second failure), in one canonical order: on Oracle each
        # get locks its row until the transaction ends (SC-12.10), so two deletes naming the
        # same records in opposite orders would each hold one and wait for the other (ORA-00060)
        ids = sorted(set(ids))
        docs = yield from self._get_plan(ids)
        deleted = 0
        for doc in docs:
            deleted += yield call("delete", self._type, doc.id)
        # True only when every id named a record of this scope and it is gone (LangChain: "True if
        # deletion is successful"); ids of another scope are never touched and make it False. An
        # empty list asks for nothing and nothing failed: True (adp38, from trial33: it was False,
        # what LangChain reads as a failed delete; its indexing API raises IndexingException on one)
        return deleted == len(ids)

    _SEARCH_ACCEPTS = ("k", "filter", "strategy")

    def _search(self, query: str, k: int, filter: Optional[dict], strategy: Optional[str], kwargs: Optional[dict] = None,
                where: str = "similarity_search"):
        _refuse_unknown(where, kwargs or {}, self._SEARCH_ACCEPTS, "OramemVectorStore", framework=True)
        if not isinstance(k, int) or k < 1:
            raise ValueError(f"k must be an int >= 1, got {k!r}")
        return _search_plan(query, k, _scope_args(**self._scope), [self._type], filter, strategy)

    _BY_VECTOR_ACCEPTS = ("k", "filter")

    def _by_vector(self, embedding: Any, k: Any, filter: Optional[dict], kwargs: dict, where: str):
        """similarity_search_by_vector's plan: the vector goes to the store's vector search (the
        store checks its dimension), scope and filter as similarity_search's."""
        import numpy as np

        _refuse_unknown(where, kwargs, self._BY_VECTOR_ACCEPTS, "OramemVectorStore", framework=True)
        if not isinstance(k, int) or isinstance(k, bool) or k < 1:
            raise ValueError(f"k must be an int >= 1, got {k!r}")
        if isinstance(embedding, (str, bytes)):
            raise TypeError(f"{where} takes an embedding (a list of floats); for a text use similarity_search")
        hits = yield call("search", query_vector=np.asarray(embedding, dtype=np.float32), k=k, strategy="vector",
                          record_types=[self._type], metadata_filter=filter, **_scope_args(**self._scope))
        return [Document(page_content=r.content or "", metadata=r.metadata or {}, id=r.id) for r, _ in hits]

    # -- sync ----------------------------------------------------------------------------------
    def add_texts(self, texts: Iterable[str], metadatas: Optional[list[dict]] = None, *, ids=None, **kwargs: Any) -> list[str]:
        _refuse_unknown("add_texts", kwargs, ("metadatas", "ids"), "OramemVectorStore")
        # one transaction: the id checks, the thread check (oramem.threads) and the writes commit together
        return run_sync_in_transaction(self._store, self._add_plan(texts, metadatas, ids))

    def add_documents(self, documents: list[Document], **kwargs: Any) -> list[str]:
        # ids= is LangChain's (VectorStore.add_texts / from_documents pass it): it wins over the Documents' ids
        ids = kwargs.pop("ids", None) or [d.id for d in documents]
        _refuse_unknown("add_documents", kwargs, ("ids",), "OramemVectorStore")
        return self.add_texts([d.page_content for d in documents], [d.metadata for d in documents], ids=ids)

    def get_by_ids(self, ids: Sequence[str], /) -> list[Document]:
        return run_sync(self._store, self._get_plan(ids))

    def delete(self, ids: Optional[list[str]] = None, **kwargs: Any) -> Optional[bool]:
        _refuse_unknown("delete", kwargs, ("ids",), "OramemVectorStore")
        # one transaction: the scope check and the delete commit together (ids are the caller's:
        # between them another scope's record could take an id this scope's record just freed)
        return run_sync_in_transaction(self._store, self._delete_plan(ids))

    def similarity_search_with_score(self, query: str, k: int = 4, filter: Optional[dict] = None, strategy: Optional[str] = None, **kwargs: Any):
        return run_sync(self._store, self._search(query, k, filter, strategy, kwargs, "similarity_search_with_score"))

    def similarity_search(self, query: str, k: int = 4, filter: Optional[dict] = None, strategy: Optional[str] = None, **kwargs: Any):
        return [doc for doc, _ in run_sync(self._store, self._search(query, k, filter, strategy, kwargs))]

    def similarity_search_by_vector(self, embedding: list[float], k: int = 4, filter: Optional[dict] = None,
                                    **kwargs: Any) -> list[Document]:
        return run_sync(self._store, self._by_vector(embedding, k, filter, kwargs, "similarity_search_by_vector"))

    def _select_relevance_score_fn(self):
        return lambda distance: 1.0 - distance

    # -- maximal marginal relevance -----------------------------------------------------------
    def _mmr_embedder(self, k: Any, fetch_k: Any, lambda_mult: Any, kwargs: dict,
                      where: str = "max_marginal_relevance_search") -> Any:
        """The store's embedder, after checking the arguments (nothing is searched before)."""
        _refuse_unknown(where, kwargs, ("k", "fetch_k", "lambda_mult", "filter"), "OramemVectorStore", framework=True)
        if not isinstance(k, int) or isinstance(k, bool) or k < 1:
            raise ValueError(f"k must be an int >= 1, got {k!r}")
        if not isinstance(fetch_k, int) or isinstance(fetch_k, bool) or fetch_k < k:
            raise ValueError(f"fetch_k must be an int >= k ({k}), got {fetch_k!r}")
        if isinstance(lambda_mult, bool) or not isinstance(lambda_mult, (int, float)) or not 0 <= lambda_mult <= 1:
            raise ValueError(f"lambda_mult must be a number in [0, 1], got {lambda_mult!r}")
        embedder = getattr(self._store, "embedder", None)
        if embedder is None:
            raise ValueError("max marginal relevance search compares the candidates with each other through the "
                             "store's embedder, and this store was opened without one: open it with an embedder")
        return embedder

    def _mmr_candidates(self, query: Optional[str], embedding: Any, fetch_k: int, filter: Optional[dict]):
        import numpy as np

        scope = _scope_args(**self._scope)
        if query is not None:
            # the text goes to the store, as similarity_search's does: the store checks it (a
            # blank query is refused before any read) and its retrieval audit keeps the query's
            # hash (SC-16.1, SC-16.4: `oramem audit list --query Q` finds this search)
            hits = yield call("search", query, k=fetch_k, strategy="vector", record_types=[self._type],
                              metadata_filter=filter, **scope)
        else:
            hits = yield call("search", query_vector=np.asarray(embedding, dtype=np.float32), k=fetch_k,
                              strategy="vector", record_types=[self._type], metadata_filter=filter, **scope)
        return [Document(page_content=r.content or "", metadata=r.metadata or {}, id=r.id) for r, _ in hits]

    @staticmethod
    def _mmr_pick(embedding: Any, docs: list, vectors: Any, k: int, lambda_mult: float) -> list:
        import numpy as np
        from langchain_core.vectorstores.utils import maximal_marginal_relevance

        chosen = maximal_marginal_relevance(np.asarray(embedding, dtype=np.float32), list(vectors),
                                            lambda_mult=lambda_mult, k=k)
        return [docs[i] for i in chosen]

    def max_marginal_relevance_search(self, query: str, k: int = 4, fetch_k: int = 20, lambda_mult: float = 0.5,
                                      filter: Optional[dict] = None, **kwargs: Any) -> list[Document]:
        """The ``k`` of the ``fetch_k`` nearest records (vector search, this scope, ``filter``)
        that balance relevance to ``query`` and difference from each other (``lambda_mult``: 1
        = relevance only, 0 = diversity only). The candidates are compared through their content
        embedded with the store's embedder (``fetch_k`` texts embedded per search). The
        query text goes to the store's search as ``similarity_search``'s does (checked there, and
        audited with its hash, SC-16.4), and is embedded once more here for the comparison."""
        embedder = self._mmr_embedder(k, fetch_k, lambda_mult, kwargs)
        docs = run_sync(self._store, self._mmr_candidates(query, None, fetch_k, filter))
        if not docs:
            return []
        query_vector = embedder.embed([query], is_query=True)[0]
        return self._mmr_pick(query_vector, docs, embedder.embed([d.page_content for d in docs]), k, lambda_mult)

    def max_marginal_relevance_search_by_vector(self, embedding: Any, k: int = 4, fetch_k: int = 20,
                                                lambda_mult: float = 0.5, filter: Optional[dict] = None,
                                                **kwargs: Any) -> list[Document]:
        embedder = self._mmr_embedder(k, fetch_k, lambda_mult, kwargs, "max_marginal_relevance_search_by_vector")
        docs = run_sync(self._store, self._mmr_candidates(None, embedding, fetch_k, filter))
        if not docs:
            return []
        return self._mmr_pick(embedding, docs, embedder.embed([d.page_content for d in docs]), k, lambda_mult)

    # -- async ---------------------------------------------------------------------------------
    async def aadd_texts(self, texts: Iterable[str], metadatas: Optional[list[dict]] = None, *, ids=None, **kwargs: Any) -> list[str]:
        _refuse_unknown("aadd_texts", kwargs, ("metadatas", "ids"), "OramemVectorStore")
        return await run_async_in_transaction(self._store, self._add_plan(texts, metadatas, ids))

    async def aadd_documents(self, documents: list[Document], **kwargs: Any) -> list[str]:
        ids = kwargs.pop("ids", None) or [d.id for d in documents]
        _refuse_unknown("aadd_documents", kwargs, ("ids",), "OramemVectorStore")
        return await self.aadd_texts([d.page_content for d in documents], [d.metadata for d in documents], ids=ids)

    async def aget_by_ids(self, ids: Sequence[str], /) -> list[Document]:
        return await run_async(self._store, self._get_plan(ids))

    async def adelete(self, ids: Optional[list[str]] = None, **kwargs: Any) -> Optional[bool]:
        _refuse_unknown("adelete", kwargs, ("ids",), "OramemVectorStore")
        return await run_async_in_transaction(self._store, self._delete_plan(ids))

    async def asimilarity_search_with_score(self, query: str, k: int = 4, filter: Optional[dict] = None, strategy: Optional[str] = None, **kwargs: Any):
        return await run_async(self._store, self._search(query, k, filter, strategy, kwargs, "asimilarity_search_with_score"))

    async def asimilarity_search(self, query: str, k: int = 4, filter: Optional[dict] = None, strategy: Optional[str] = None, **kwargs: Any):
        return [doc for doc, _ in await run_async(self._store, self._search(query, k, filter, strategy, kwargs, "asimilarity_search"))]

    async def amax_marginal_relevance_search(self, query: str, k: int = 4, fetch_k: int = 20, lambda_mult: float = 0.5,
                                             filter: Optional[dict] = None, **kwargs: Any) -> list[Document]:
        embedder = self._mmr_embedder(k, fetch_k, lambda_mult, kwargs, "amax_marginal_relevance_search")
        docs = await run_async(self._store, self._mmr_candidates(query, None, fetch_k, filter))
        if not docs:
            return []
        query_vector = (await embedder.embed_async([query], is_query=True))[0]
        vectors = await embedder.embed_async([d.page_content for d in docs])
        return self._mmr_pick(query_vector, docs, vectors, k, lambda_mult)

    async def asimilarity_search_by_vector(self, embedding: list[float], k: int = 4, filter: Optional[dict] = None,
                                           **kwargs: Any) -> list[Document]:
        return await run_async(self._store, self._by_vector(embedding, k, filter, kwargs, "asimilarity_search_by_vector"))

    async def amax_marginal_relevance_search_by_vector(self, embedding: Any, k: int = 4, fetch_k: int = 20,
                                                       lambda_mult: float = 0.5, filter: Optional[dict] = None,
                                                       **kwargs: Any) -> list[Document]:
        embedder = self._mmr_embedder(k, fetch_k, lambda_mult, kwargs, "amax_marginal_relevance_search_by_vector")
        docs = await run_async(self._store, self._mmr_candidates(None, embedding, fetch_k, filter))
        if not docs:
            return []
        vectors = await embedder.embed_async([d.page_content for d in docs])
        return self._mmr_pick(embedding, docs, vectors, k, lambda_mult)


class OramemRetriever(BaseRetriever):
    """Documents for a query from ``store.search`` (any strategy, scope and metadata filter)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    store: Any
    k: int = 4
    strategy: Optional[str] = None
    filter: Optional[dict] = None
    record_types: Optional[list[str]] = None
    user_id: Optional[str] = None
    agent_id: Optional[str] = None
    thread_id: Optional[str] = None

    @model_validator(mode="after")
    def _check_fields(self) -> "OramemRetriever":
        # when the retriever is built, as the other adapters check theirs: a blank scope id or a
        # k below 1 failed at every invoke, a path or an OramemVectorStore at the first one
        check_store(self.store, "OramemRetriever")
        check_scope_ids(("user_id", self.user_id), ("agent_id", self.agent_id), ("thread_id", self.thread_id))
        if isinstance(self.k, bool) or self.k < 1:
            raise ValueError(f"k must be an int >= 1 (the number of documents an invoke returns), got {self.k!r}")
        # the search options too, as the store reads them (a misspelt strategy or record type
        # failed at every invoke; whether this store can answer the strategy is still the
        # search's to say, SC-6.6)
        if self.strategy is not None:
            SearchStrategy.coerce(self.strategy, "strategy")
        if self.record_types is not None:
            if not self.record_types:
                raise ValueError("record_types is empty; leave it out (None) to search every type")
            for record_type in self.record_types:
                check_record_type(record_type, allow_thread=False)
        return self

    def _plan(self, query: str, k: Optional[int]):
        k = self.k if k is None else k
        if not isinstance(k, int) or k < 1:
            raise ValueError(f"k must be an int >= 1, got {k!r}")
        scope = _scope_args(self.user_id, self.agent_id, self.thread_id)
        pairs = yield from _search_plan(query, k, scope, self.record_types, self.filter, self.strategy)
        return [doc for doc, _ in pairs]

    @staticmethod
    def _check_call(kwargs: dict) -> None:
        # invoke(query, **kwargs) hands every keyword argument here (BaseRetriever.invoke, after
        # reading verbose and taking run_id): k is read, any other is refused, never dropped
        try:
            _refuse_unknown("OramemRetriever.invoke", kwargs, ("k",), "OramemRetriever", framework=True)
        except TypeError as refused:
            fields = [n for n in kwargs if n in ("strategy", "filter", "record_types")]
            if fields:
                raise TypeError(f"{refused}. {', '.join(fields)} is a field of the retriever, set when it is "
                                f"constructed: OramemRetriever(store=..., {fields[0]}=...)") from None
            raise

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun, k: Optional[int] = None,
                                **kwargs: Any) -> list[Document]:
        self._check_call(kwargs)
        return run_sync(self.store, self._plan(query, k))

    async def _aget_relevant_documents(self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun,
                                       k: Optional[int] = None, **kwargs: Any) -> list[Document]:
        self._check_call(kwargs)
        return await run_async(self.store, self._plan(query, k))


class OramemChatMessageHistory(BaseChatMessageHistory):
    def __init__(self, store: Any, thread_id: str, *, user_id: Optional[str] = None, agent_id: Optional[str] = None) -> None:
        if not isinstance(thread_id, str) or not thread_id.strip():
            raise ValueError(f"thread_id must be a non-empty str (not only white space), got {thread_id!r}")
        check_scope_ids(("user_id", user_id), ("agent_id", agent_id))
        check_store(store, "OramemChatMessageHistory")
        self._store = store
        self.thread_id = thread_id
        self._user_id = user_id
        self._agent_id = agent_id
        self._scope = ThreadScope(thread_id, user_id, agent_id)

    def _messages_plan(self):
        records = yield from self._scope.messages()
        out = []
        for r in records:
            stored = (r.metadata or {}).get(MESSAGE_KEY)
            if stored is not None:
                out.extend(messages_from_dict([stored]))
            else:
                out.extend(messages_from_dict([{"type": "human" if r.role in (None, "user", "human") else "ai", "data": {"content": r.content or ""}}]))
        return out

    def _add_plan(self, messages: Sequence[BaseMessage]):
        messages = list(messages)
        if not messages:
            return None
        for i, m in enumerate(messages):
            if not isinstance(m, BaseMessage):
                raise TypeError(f"messages[{i}] must be a LangChain BaseMessage, got {type(m).__name__}")
        refusal = yield from self._scope.write_refusal()
        if refusal is not None:
            raise ValueError(refusal)
        yield call(
            "add",
            [m.text if isinstance(m.content, list) else m.content for m in messages],
            "message",
            thread_ids=self.thread_id,
            user_ids=self._user_id,
            agent_ids=self._agent_id,
            roles=[m.type for m in messages],
            metadata=[{MESSAGE_KEY: message_to_dict(m)} for m in messages],
        )
        return None

    @property
    def messages(self) -> list[BaseMessage]:  # type: ignore[override]
        return run_sync(self._store, self._messages_plan())

    async def aget_messages(self) -> list[BaseMessage]:
        return await run_async(self._store, self._messages_plan())

    def add_messages(self, messages: Sequence[BaseMessage]) -> None:
        # the thread check and the write in one transaction (ThreadScope.write_refusal)
        run_sync_in_transaction(self._store, self._add_plan(messages))

    async def aadd_messages(self, messages: Sequence[BaseMessage]) -> None:
        await run_async_in_transaction(self._store, self._add_plan(messages))

    def clear(self) -> None:
        run_sync_in_transaction(self._store, self._scope.clear())

    async def aclear(self) -> None:
        await run_async_in_transaction(self._store, self._scope.clear())
