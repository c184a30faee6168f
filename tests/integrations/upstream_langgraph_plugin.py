"""pytest plugin: run LangGraph's own store tests (``libs/checkpoint/tests/test_store.py`` of a
langgraph checkout, unmodified) against ``OramemStore`` on SQLite.

Those tests build their store as ``InMemoryStore()`` / ``InMemoryStore(index={...})``; this
plugin replaces that class, before the test module is imported, by an ``OramemStore`` subclass
built with ``OramemStore.from_index_config`` (a fresh in-memory SQLite store each time).
Usage, with this folder on ``PYTHONPATH`` (never commit the checkout):

    cd <langgraph>/libs/checkpoint && python -m pytest -o asyncio_mode=auto \\
        -p upstream_langgraph_plugin tests/test_store.py
"""

from __future__ import annotations

import langgraph.store.memory as memory

from oramem.integrations.langgraph import OramemStore


class OramemBackedStore(OramemStore):
    def __init__(self, *, index=None):
        made = OramemStore.from_index_config(index)
        self.__dict__.update(made.__dict__)


memory.InMemoryStore = OramemBackedStore
