"""A path SQLite cannot open is one clear error from ``SQLiteMemoryStore``, before any
embedder is chosen (new-user trial 31: a directory, or a file in a missing directory, gave
the lexical-fallback warning, or with network a 90 MB model download, then a bare
``sqlite3.OperationalError: unable to open database file``; the CLI already said what was
wrong)."""
from __future__ import annotations

import os
import warnings

import pytest

from oramem import SQLiteMemoryStore
from oramem.errors import ArgumentError, StoreError, StoreNotFound
from oramem.embedders import defaults


@pytest.fixture
def no_default_model(monkeypatch):
    """Fail the test if the open asks for the default embedder (a download online)."""
    def refuse(*args, **kwargs):
        raise AssertionError("the default embedder was resolved before the path was checked")

    monkeypatch.setattr(defaults, "default_embedder", refuse)


def test_a_directory_is_refused_with_the_fix(tmp_path, no_default_model):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ArgumentError) as info:
            SQLiteMemoryStore(str(tmp_path))
    text = str(info.value)
    assert "is a directory" in text and os.path.join(str(tmp_path), "oramem.db") in text
    assert os.listdir(tmp_path) == []  # nothing written


def test_a_pathlike_directory_too(tmp_path, no_default_model):
    with pytest.raises(ArgumentError, match="is a directory"):
        SQLiteMemoryStore(tmp_path, search_strategy="keyword")


def test_a_missing_directory_names_it(tmp_path, no_default_model):
    path = tmp_path / "no" / "such" / "mem.db"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(StoreError) as info:
            SQLiteMemoryStore(str(path))
    text = str(info.value)
    assert f"directory {tmp_path / 'no' / 'such'} does not exist" in text and "create it" in text
    assert not (tmp_path / "no").exists()


def test_require_existing_on_a_missing_file_is_still_store_not_found(tmp_path, no_default_model):
    """No file and a policy that creates nothing: StoreNotFound as before, and no embedder
    resolved for a store that cannot exist."""
    with pytest.raises(StoreNotFound):
        SQLiteMemoryStore(str(tmp_path / "typo.db"), schema_policy="REQUIRE_EXISTING")
    with pytest.raises(StoreNotFound):
        SQLiteMemoryStore(str(tmp_path / "no" / "typo.db"), read_only=True)


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0, reason="root may write any directory")
def test_an_unwritable_directory_says_so(tmp_path, no_default_model):
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    try:
        with pytest.raises(StoreError, match="is not writable"):
            SQLiteMemoryStore(str(ro / "mem.db"), search_strategy="keyword")
    finally:
        ro.chmod(0o755)


def test_memory_and_a_new_file_still_open(tmp_path):
    with SQLiteMemoryStore(":memory:", search_strategy="keyword") as store:
        assert store.add(["x"], "memory")
    with SQLiteMemoryStore(str(tmp_path / "new.db"), search_strategy="keyword") as store:
        assert store.add(["x"], "memory")
