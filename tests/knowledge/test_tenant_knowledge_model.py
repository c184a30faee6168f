"""A stateful test of the knowledge layer's user boundary (KC-3.7, KC-3.8, KC-3.10, SC-13.3),
the companion of ``tests/contract/test_tenant_model.py``.

Users ``alice``, ``bob``, ``carol`` (and the shared scope, no user) on agents ``desk`` and
``bank`` add facts (``add_fact``) and write messages in sessions ``t1`` (alice's and bob's),
``t2``, ``t3`` (``write``, with a scripted extraction); random sequences interleave
``forget`` of a user or an agent, a user profile's cascade delete and ``delete_thread``.
After every step: ``get_all`` per agent and user returns exactly the user's facts plus the
shared ones (KC-3.8: ``None`` = the shared facts only), ``retrieve`` serves no fact and no
word of another user; after erasing a user no knowledge row and no store record of hers is
left in any table (KC-3.10), and after erasing an agent none of the agent's. Every fact's
text holds a marker word of its own. ``ORAMEM_MODEL_EXAMPLES=N`` runs a longer, randomised
exploration.
"""

from __future__ import annotations

import collections
import itertools
import os
from typing import Optional

import sqlalchemy as sa
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule, run_state_machine_as_test

from oramem import SQLiteMemoryStore
from oramem.knowledge import KnowledgeConfig, KnowledgeMemory
from oramem.testing import HashEmbedder, ScriptedLLM

from .helpers import NEUTRAL, Clock, extract

from contract._support import marker_word

USERS = ("alice", "bob", "carol")
AGENTS = ("desk", "bank")
HOME = {"alice": ("t1", "t2"), "bob": ("t1", "t3"), "carol": ("t3", "t2")}
VOCAB = ("apple", "river", "piano", "garden")

_EXAMPLES = int(os.environ.get("ORAMEM_MODEL_EXAMPLES", "0") or 0)
_STEPS = int(os.environ.get("ORAMEM_MODEL_STEPS", "0") or 0)
#: how often each rule ran (read by exploratory runs)
STATS: collections.Counter = collections.Counter()


_marker = marker_word


class KnowledgeTenantModel(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        STATS["examples"] += 1
        self.clock = Clock()
        self.store = SQLiteMemoryStore(":memory:", embedder=HashEmbedder(384), clock=self.clock, search_strategy="hybrid")
        self.llm = ScriptedLLM({"event_emotion": NEUTRAL})
        self.km = KnowledgeMemory(self.store, self.llm, config=KnowledgeConfig(enable_reranker=False), clock=self.clock)
        self.counter = itertools.count()
        # fact text -> (agent, user): the facts that must be there
        self.facts: dict[str, tuple[str, Optional[str]]] = {}
        # marker -> (agent, user) of every fact and message ever written
        self.owner: dict[str, tuple[str, Optional[str]]] = {}

    def teardown(self) -> None:
        self.km.close()
        self.store.close()

    def _fact_text(self, agent: str, user: Optional[str], words: list[str]) -> tuple[str, str]:
        m = _marker(next(self.counter))
        self.owner[m] = (agent, user)
        subject = m.capitalize()  # one subject per fact: no reconcile between them
        return subject, f"{subject} likes {' '.join(words)} {m}"

    @rule(agent=st.sampled_from(AGENTS), user=st.sampled_from(USERS + (None,)),
          words=st.lists(st.sampled_from(VOCAB), min_size=1, max_size=2))
    def add_fact(self, agent, user, words):
        STATS["add_fact"] += 1
        subject, text = self._fact_text(agent, user, words)
        result = self.km.add_fact(agent, subject, text, subject_type="person", user_id=user)
        assert len(result.facts_added) == 1, result
        self.facts[text] = (agent, user)
        self.clock.advance(minutes=1)

    @rule(agent=st.sampled_from(AGENTS), user=st.sampled_from(USERS), data=st.data(),
          words=st.lists(st.sampled_from(VOCAB), min_size=1, max_size=2))
    def write(self, agent, user, data, words):
        """A user's message in one of her sessions: an event (a store message of the
        session's thread) and the fact extracted from it, both hers (KC-3.7)."""
        STATS["write"] += 1
        session = data.draw(st.sampled_from(HOME[user]), label="session")
        subject, text = self._fact_text(agent, user, words)
        self.llm.route("extract", extract(entities=[(subject, "person")], facts=[(subject, text)]))
        result = self.km.write(agent, f"{text} said {subject}", user, user_id=user, session_id=session)
        assert len(result.facts_added) == 1, result
        self.facts[text] = (agent, user)
        self.clock.advance(minutes=1)

    @rule(user=st.sampled_from(USERS), via=st.sampled_from(["forget", "km.forget", "cascade"]))
    def erase_user(self, user, via):
        """KC-3.10 / SC-13.3: her rows on every agent go; the shared facts and other users'
        stay (every fact here is learned in its own scope, so the profile's cascade erases
        the same facts as ``forget``)."""
        STATS["erase_user"] += 1
        if via == "forget":
            self.store.forget(user_id=user)
        elif via == "km.forget":
            self.km.forget(user_id=user)
        else:
            self.store.delete("user_profile", user, cascade=True)
        self.facts = {t: o for t, o in self.facts.items() if o[1] != user}
        self._assert_no_rows("user_id", user)

    @rule(agent=st.sampled_from(AGENTS))
    def erase_agent(self, agent):
        """SC-13.4 / KC-3.6: no knowledge row of the agent is left."""
        STATS["erase_agent"] += 1
        self.km.forget(agent_id=agent)
        self.facts = {t: o for t, o in self.facts.items() if o[0] != agent}
        self._assert_no_rows("agent_id", agent)

    @rule(thread=st.sampled_from(("t1", "t2", "t3")))
    def delete_thread(self, thread):
        """KC-3.6: the events go, the facts learned from them stay (``source_event_id``
        cleared)."""
        STATS["delete_thread"] += 1
        self.store.delete_thread(thread)

    def _assert_no_rows(self, column: str, actor: str) -> None:
        t = self.km.runtime.tables
        markers = [m for m, o in self.owner.items() if (o[1] if column == "user_id" else o[0]) == actor]
        with self.km.runtime.backend.read() as conn:
            for table in t.all_agent_tables():
                if column in table.c:
                    rows = conn.execute(sa.select(table).where(table.c[column] == actor)).all()
                    assert rows == [], (table.name, column, actor)
                texts = [repr(tuple(r)) for r in conn.execute(sa.select(table)).all()]
                for m in markers:
                    assert not any(m in x for x in texts), (table.name, m)
        for rtype in ("message", "fact", "memory"):
            found = self.store.list(rtype, limit=None, **{column: actor})
            assert found == [], (rtype, column, actor)
            for r in self.store.list(rtype, limit=None):
                assert not any(m in (r.content or "") for m in markers), (r.id, actor)

    @invariant()
    def reads_stay_in_scope(self):
        for agent in AGENTS:
            shared = {t for t, o in self.facts.items() if o == (agent, None)}
            for user in USERS + (None,):
                mine = {t for t, o in self.facts.items() if o == (agent, user)} | shared
                got = self.km.get_all(agent, user_id=user, limit=1000)
                assert {f.fact_text for f in got} == mine, (agent, user)
                assert {f.user_id for f in got} <= {user, None}
            for user in USERS + (None,):
                result = self.km.retrieve(agent, "who likes apple river piano garden", user_id=user)
                allowed = {t for t, o in self.facts.items() if o[0] == agent and o[1] in (user, None)}
                served = {f.fact_text for f in result.facts}
                assert served <= allowed, (agent, user, served - allowed)
                foreign = [m for m, o in self.owner.items() if o[1] not in (user, None) or o[0] != agent]
                seen = result.context + " ".join(served)
                assert not [m for m in foreign if m in seen], (agent, user)


def test_knowledge_tenant_model():
    run_state_machine_as_test(KnowledgeTenantModel, settings=settings(
        max_examples=_EXAMPLES or 10, stateful_step_count=_STEPS or (30 if _EXAMPLES else 15), deadline=None,
        derandomize=not _EXAMPLES, database=None, suppress_health_check=[HealthCheck.too_slow], print_blob=True))
