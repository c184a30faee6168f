"""The default model's download (oramem.embedders.hub) against a loopback Hub mirror the
test starts itself, serving a tiny ONNX model the test builds (tests/embedders/hub_mirror.py).
Nothing here reaches any other host."""

from __future__ import annotations

import io
import json
import time
import warnings

import pytest

for _mod in ("onnx", "onnxruntime", "tokenizers"):
    pytest.importorskip(_mod, reason=f"{_mod} not installed: pip install '.[test]'")

from click.testing import CliRunner  # noqa: E402

from oramem import SQLiteMemoryStore  # noqa: E402
from oramem.cli import cli  # noqa: E402
from oramem.embedders import HashEmbedder, ONNXEmbedder, defaults, hub  # noqa: E402
from oramem.embedders.hub import ChecksumMismatch, HubFile, HubModel, ModelOffline  # noqa: E402
from oramem.embedders.identity import decode_identity  # noqa: E402
from oramem.sqlite import admin  # noqa: E402

from .hub_mirror import COMMIT, Mirror, model_files, sha256  # noqa: E402

REPO = hub.MINILM.repo


@pytest.fixture
def files(tmp_path):
    return model_files(tmp_path / "src")


@pytest.fixture
def mirror(files):
    m = Mirror(REPO, files)
    yield m
    m.close()


@pytest.fixture
def tiny_pin(files):
    """The default model's pin with the tiny model's digests (what a faithful mirror of it serves)."""
    return HubModel(REPO, COMMIT, tuple(
        HubFile(f.name, sha256(files[f.name]) if f.sha256 else None, len(files[f.name]) if f.size else None, f.required)
        for f in hub.MINILM.files
    ))


@pytest.fixture
def online(monkeypatch, tmp_path, mirror, tiny_pin):
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("ORAMEM_ONNX_MODEL", raising=False)
    monkeypatch.setenv("HF_ENDPOINT", mirror.url + "/")
    monkeypatch.setenv("ORAMEM_MODEL_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(defaults, "_notified", False)
    monkeypatch.setattr(defaults, "_failed", None)
    monkeypatch.setattr(hub, "DEFAULT_MODEL", tiny_pin)
    monkeypatch.setitem(hub.MODELS, REPO, tiny_pin)
    return tmp_path / "cache"


def test_pull_checks_every_file_and_records_its_digest(online, mirror, files, tiny_pin):
    out = io.StringIO()  # not a terminal: one line
    path = hub.pull(progress=out)
    assert path == online / "sentence-transformers--all-MiniLM-L6-v2"
    assert out.getvalue().count("\n") == 1 and out.getvalue().startswith(f"oramem: downloading {REPO}@1110a243fdf4")
    manifest = json.loads((path / hub.MANIFEST).read_text())
    assert manifest["revision"] == COMMIT and manifest["commit"] == COMMIT and manifest["endpoint"] == mirror.url
    assert set(manifest["files"]) == set(files)
    for name, data in files.items():
        assert (path / name).read_bytes() == data
        assert manifest["files"][name]["sha256"] == sha256(data)
    assert {f["checked"] for f in manifest["files"].values()} == {"published"}
    # the LFS graph came through the Location redirect, from the pinned revision's URL
    assert ("HEAD", f"/{REPO}/resolve/{COMMIT}/onnx/model.onnx", None) in mirror.requests
    assert mirror.gets("onnx/model.onnx") == [None]
    assert not (online / ".partial" / f"sentence-transformers--all-MiniLM-L6-v2@{COMMIT}").exists()
    before = len(mirror.requests)
    assert hub.pull() == path and len(mirror.requests) == before  # cached: no network


def test_an_unpinned_repository_is_fetched_at_main_and_its_digests_recorded(online, files, monkeypatch):
    other = dict(files)
    del other["config.json"]  # optional for a repository oramem does not pin
    acme = Mirror("acme/tiny-embed", other, revision="main")
    try:
        monkeypatch.setenv("HF_ENDPOINT", acme.url)
        path = hub.pull("acme/tiny-embed")
        manifest = json.loads((path / hub.MANIFEST).read_text())
        assert manifest["revision"] == "main" and manifest["commit"] == "main"
        checked = {name: f["checked"] for name, f in manifest["files"].items()}
        assert checked.pop("onnx/model.onnx") == "lfs-etag"  # the server's LFS SHA-256
        assert set(checked.values()) == {"recorded"} and "config.json" not in checked
        emb = ONNXEmbedder("acme/tiny-embed")
        assert emb.model_dir == path.resolve() and emb.embedder_identity["files"]["model.onnx"] == sha256(files["onnx/model.onnx"])
    finally:
        acme.close()


def test_published_digest_mismatch_installs_nothing(online, mirror):
    # the real pin of all-MiniLM-L6-v2 against a mirror serving other bytes under its name
    with pytest.raises(ChecksumMismatch, match=r"onnx/model.onnx: the server serves LFS object [0-9a-f]{64}, the published "
                       r"SHA-256 is 6fd5d72fe4589f189f8ebc006442dbb529bb7ce38f8082112682524616046452"):
        hub.pull(hub.MINILM)
    assert mirror.gets("onnx/model.onnx") == []  # refused before a byte was fetched
    assert not (online / "sentence-transformers--all-MiniLM-L6-v2").exists()


def test_bytes_that_do_not_match_are_discarded(online, mirror, files, tiny_pin):
    mirror.lie_lfs_etag = tiny_pin.files[0].sha256  # announces the pinned digest ...
    mirror.files["onnx/model.onnx"] = files["onnx/model.onnx"][:-1] + b"\x00"  # ... serves other bytes
    with pytest.raises(ChecksumMismatch, match=r"onnx/model.onnx: SHA-256 [0-9a-f]{64} is not the published"):
        hub.pull()
    staging = online / ".partial" / f"sentence-transformers--all-MiniLM-L6-v2@{COMMIT}"
    assert not (staging / "onnx" / "model.onnx.part").exists() and not (staging / "onnx" / "model.onnx").exists()
    assert not (online / "sentence-transformers--all-MiniLM-L6-v2").exists()
    assert defaults.local_model() is None


def test_interrupted_download_is_never_usable_and_a_retry_resumes(online, mirror, files, monkeypatch):
    monkeypatch.setattr(hub.time, "sleep", lambda s: None)
    mirror.interrupt["onnx/model.onnx"] = hub.ATTEMPTS  # every attempt of this pull breaks off
    with pytest.raises(hub.ModelNotAvailable, match="broke off .* run the same command again to resume"):
        hub.pull()
    final = online / "sentence-transformers--all-MiniLM-L6-v2"
    assert not final.exists() and defaults.local_model() is None
    part = online / ".partial" / f"sentence-transformers--all-MiniLM-L6-v2@{COMMIT}" / "onnx" / "model.onnx.part"
    have = part.stat().st_size
    assert 0 < have < len(files["onnx/model.onnx"])
    # a store opened meanwhile tries again (resuming), breaks off again, and falls back
    mirror.interrupt["onnx/model.onnx"] = hub.ATTEMPTS
    with pytest.warns(UserWarning, match="HashEmbedder"):
        with SQLiteMemoryStore(str(online.parent / "a.db")) as store:
            assert isinstance(store.embedder, HashEmbedder)
    # a new pull (next process) resumes with a range request and completes
    del mirror.requests[:]
    path = hub.pull()
    ranges = mirror.gets("onnx/model.onnx")
    assert ranges[0] is not None and ranges[0].startswith("bytes=") and int(ranges[0][6:-1]) >= have
    assert (path / "onnx" / "model.onnx").read_bytes() == files["onnx/model.onnx"]
    assert (path / "tokenizer.json").read_bytes() == files["tokenizer.json"]


def test_one_interruption_is_resumed_within_the_pull(online, mirror, files, monkeypatch):
    monkeypatch.setattr(hub.time, "sleep", lambda s: None)
    mirror.interrupt["tokenizer.json"] = 1
    path = hub.pull()
    ranges = mirror.gets("tokenizer.json")
    assert ranges[0] is None and ranges[1] is not None and ranges[1] != "bytes=0-"
    assert (path / "tokenizer.json").read_bytes() == files["tokenizer.json"]


def test_a_server_ignoring_ranges_restarts_the_file(online, mirror, files, monkeypatch):
    monkeypatch.setattr(hub.time, "sleep", lambda s: None)
    mirror.interrupt["onnx/model.onnx"] = 1
    mirror.ignore_range = True
    path = hub.pull()
    assert (path / "onnx" / "model.onnx").read_bytes() == files["onnx/model.onnx"]


def test_a_fresh_store_with_no_embedder_becomes_semantic(online, mirror, files, tmp_path):
    db = str(tmp_path / "s.db")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no fallback notice
        with SQLiteMemoryStore(db) as store:
            assert isinstance(store.embedder, ONNXEmbedder) and store.vector_dim == 6
            store.add(["hello world", "red car"], "memory")
    ident = decode_identity(admin.list_stores(db)["DEFAULT"]["embedder"])
    assert ident["kind"] == "onnx" and ident["model"] == REPO
    assert ident["files"] == {
        "model.onnx": sha256(files["onnx/model.onnx"]),
        "tokenizer.json": sha256(files["tokenizer.json"]),
        "1_Pooling/config.json": sha256(files["1_Pooling/config.json"]),
        "modules.json": sha256(files["modules.json"]),
        "sentence_bert_config.json": sha256(files["sentence_bert_config.json"]),
    }
    before = len(mirror.requests)
    with SQLiteMemoryStore(db) as again:  # reopen reuses it, from the cache
        assert isinstance(again.embedder, ONNXEmbedder) and again.embedder.model_id == REPO
        assert again.search("red car", k=1)[0][0].content == "red car"
    out = CliRunner().invoke(cli, ["--db", db, "search", "hello world", "-k", "1"], catch_exceptions=False)
    assert out.exit_code == 0 and "hello world" in out.output
    assert len(mirror.requests) == before
    listed = CliRunner().invoke(cli, ["models", "list"], catch_exceptions=False)
    assert listed.exit_code == 0 and REPO in listed.output and "ready" in listed.output
    # the cache cleared: the pinned model is fetched again (same pins) and the store reopens with it
    import shutil

    shutil.rmtree(online / "sentence-transformers--all-MiniLM-L6-v2")
    with SQLiteMemoryStore(db) as third:
        assert isinstance(third.embedder, ONNXEmbedder)
        assert third.search("red car", k=1)[0][0].content == "red car"
    assert len(mirror.requests) > before


def test_offline_falls_back_with_one_line(online, mirror, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(ModelOffline, match="HF_HUB_OFFLINE"):
        hub.pull()
    with pytest.warns(UserWarning) as caught:
        with SQLiteMemoryStore(str(tmp_path / "a.db")) as store:
            assert isinstance(store.embedder, HashEmbedder) and store.vector_dim == 256
        SQLiteMemoryStore(str(tmp_path / "b.db")).close()
    texts = [str(w.message) for w in caught if "HashEmbedder" in str(w.message)]
    assert len(texts) == 1 and "\n" not in texts[0]
    assert "HF_HUB_OFFLINE" in texts[0] and "`oramem models pull`" in texts[0]
    assert mirror.requests == []
    out = CliRunner().invoke(cli, ["demo"], catch_exceptions=False)
    assert out.exit_code == 0 and "HashEmbedder(dim=256, seed=0) (lexical, not semantic)" in out.output


def test_no_network_falls_back_quickly(online, monkeypatch, tmp_path):
    mirror_down = Mirror(REPO, {})
    url = mirror_down.url
    mirror_down.close()  # nothing listens there any more: connection refused
    monkeypatch.setenv("HF_ENDPOINT", url)
    started = time.monotonic()
    with pytest.warns(UserWarning, match=r"could not be fetched \(cannot reach"):
        with SQLiteMemoryStore(str(tmp_path / "a.db")) as store:
            assert isinstance(store.embedder, HashEmbedder)
    assert time.monotonic() - started < 30
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # not tried (nor said) again in this process
        SQLiteMemoryStore(str(tmp_path / "b.db")).close()


def test_cli_models_pull_and_list(online, mirror):
    runner = CliRunner()
    empty = runner.invoke(cli, ["models", "list"], catch_exceptions=False)
    assert empty.exit_code == 0 and "no models in" in empty.output
    out = runner.invoke(cli, ["models", "pull"], catch_exceptions=False)
    assert out.exit_code == 0, out.output
    assert f"{REPO}@1110a243fdf4 pulled" in out.stdout and "6 published" in out.stdout
    again = runner.invoke(cli, ["--json", "models", "pull", "all-MiniLM-L6-v2"], catch_exceptions=False)
    data = json.loads(again.stdout)
    assert data["already_cached"] is True and data["revision"] == COMMIT
    listed = json.loads(runner.invoke(cli, ["--json", "models", "list"], catch_exceptions=False).stdout)
    assert [e["model"] for e in listed] == [REPO] and listed[0]["complete"] is True
    bad = runner.invoke(cli, ["models", "pull", "not a repo"])
    assert bad.exit_code == 2 and "owner/name" in bad.output
    missing = runner.invoke(cli, ["models", "pull", "acme/nothing"])
    assert missing.exit_code == 1 and "HTTP 404" in missing.output


def test_a_terminal_gets_a_progress_bar(online, files):
    class Terminal(io.StringIO):
        def isatty(self):
            return True

    out = Terminal()
    hub.pull(progress=out)
    text = out.getvalue()
    assert text.startswith(f"oramem: downloading {REPO}@1110a243fdf4")
    bars = [line for line in text.split("\n") if "\r" in line]
    assert len(bars) == len(files)  # one finished bar per file
    assert all("100.0%" in bar.rsplit("\r", 1)[1] for bar in bars)


def test_identity_files_are_compared_when_both_sides_record_them():
    from oramem.embedders.identity import same_identity

    base = {"kind": "onnx", "model": REPO, "digest": "sha256:abc", "dimension": 384, "normalize": True,
            "pooling": "mean", "prefixes": None, "path": None}
    new = {**base, "files": {"model.onnx": "a" * 64, "tokenizer.json": "b" * 64}}
    assert same_identity(base, new) and same_identity(new, base)  # a store built before files were recorded
    assert same_identity(new, {**new, "model": "elsewhere"})
    assert not same_identity(new, {**new, "files": {"model.onnx": "a" * 64, "tokenizer.json": "c" * 64}})
