"""pytest plugin: run the OpenAI Agents SDK's own session tests (``tests/memory/test_session.py``,
``tests/memory/test_session_limit.py`` of an openai-agents-python checkout, unmodified) against
``OramemSession``.

Those tests build sessions as ``SQLiteSession(session_id, db_path, session_settings=...)``;
this plugin replaces that class, before the tests are imported, by an ``OramemSession``
subclass over a ``SQLiteMemoryStore`` on the same path. Usage, with this folder on
``PYTHONPATH`` (never commit the checkout):

    cd <openai-agents-python> && python -m pytest -p upstream_openai_agents_plugin \\
        tests/memory/test_session.py tests/memory/test_session_limit.py
"""

from __future__ import annotations

import agents

from oramem import SQLiteMemoryStore
from oramem.integrations.openai_agents import OramemSession


class OramemBackedSession(OramemSession):
    def __init__(self, session_id, db_path=":memory:", sessions_table=None, messages_table=None, session_settings=None):
        store = SQLiteMemoryStore(str(db_path), search_strategy="keyword")
        super().__init__(session_id, store, session_settings=session_settings)

    def close(self):
        self._store.close()


agents.SQLiteSession = OramemBackedSession
