"""``frozen_from_fields`` builds the same frozen objects as the dataclass constructors
(the bulk-add path of ``normalize`` relies on it, issue 14)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from oramem.normalize import Normalizer, RecordDraft, draft_records
from oramem.requests import ChunkRow, NewRecord, StoreSettings, TTLSpec, frozen_from_fields
from oramem.types import SearchStrategy, TimeToLiveAnchor


def _kwargs(cls: type, obj: object) -> dict:
    return {f.name: getattr(obj, f.name) for f in dataclasses.fields(cls)}


def test_same_object_as_the_constructor():
    ttl = TTLSpec(days=3, anchor=TimeToLiveAnchor.CREATED_AT)
    values = dict(id="r1", record_type="memory", content="hello", thread_id="t", user_id="u", agent_id=None,
                  role=None, timestamp=None, metadata={"k": 1}, ttl=ttl, chunks=(ChunkRow("hello", None),),
                  restored_times=None, metadata_json='{"k": 1}')
    built, made = frozen_from_fields(NewRecord, dict(values)), NewRecord(**values)
    assert built == made and hash(built.ttl) == hash(made.ttl) and repr(built) == repr(made)
    with pytest.raises(dataclasses.FrozenInstanceError):
        built.id = "other"  # type: ignore[misc]
    assert dataclasses.replace(built, restored_times=("a", None)).restored_times == ("a", None)


def test_missing_or_unknown_field_is_refused():
    with pytest.raises(TypeError, match=r"missing fields \['text'\]"):
        frozen_from_fields(ChunkRow, {"vector": None})
    with pytest.raises(TypeError, match=r"unknown fields \['txt'\]"):
        frozen_from_fields(ChunkRow, {"txt": "a", "vector": None})


def test_post_init_classes_are_refused():
    @dataclasses.dataclass(frozen=True)
    class Checked:
        x: int

        def __post_init__(self) -> None:
            if self.x < 0:
                raise ValueError("x < 0")

    with pytest.raises(TypeError, match="__post_init__"):
        frozen_from_fields(Checked, {"x": -1})


def test_drafts_and_records_of_a_bulk_add_equal_constructor_built_ones():
    vectors = np.eye(3, dtype=np.float32)
    drafts = draft_records(["a", "b", None], "memory", embeddings=vectors, record_ids=["x", "y", "z"],
                           user_ids="u", metadata=[{"n": 1}, None, {"content": "c"}], ttl_days=[1, None, 2])
    assert drafts == [RecordDraft(**_kwargs(RecordDraft, d)) for d in drafts]
    assert drafts[2].content == "c" and drafts[0].metadata_json == '{"n": 1}'
    settings = StoreSettings("DEFAULT", 3, SearchStrategy.VECTOR, None, None)
    norm = Normalizer(settings, None)
    plans, texts = norm.plan_records(drafts)
    records = norm.finish_records(plans, [])
    assert texts == []
    assert records == [NewRecord(**_kwargs(NewRecord, r)) for r in records]
    assert [r.ttl.days for r in records] == [1, None, 2]
    assert records[0].chunks[0].text == "a" and np.array_equal(records[0].chunks[0].vector, vectors[0])
