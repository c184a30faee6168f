"""``oramem db load-model`` against the recording fake: argument checks before any
connection, the DBMS_VECTOR.LOAD_ONNX_MODEL call shape (named, documented parameters; BLOB
streamed; metadata bound), --replace, and the dimension probe."""

from __future__ import annotations

import json

import oracledb
import pytest
from click.testing import CliRunner

from oramem.cli import cmd_db as dbcli
from oramem.oracle import models

from .fakes import Call, FakeConnection, Recorder


class _Lob(oracledb.LOB):
    """A temporary BLOB as ``createlob`` returns it (a real ``oracledb.LOB``: the fake, as the
    driver, types an untyped bind from its value and refuses other objects, DPY-3002)."""

    def __init__(self):
        self._impl = None
        self.pieces = []

    def __del__(self):
        pass

    def write(self, data, offset=1):
        self.pieces.append((offset, bytes(data)))


class Conn(FakeConnection):
    def createlob(self, lob_type, data=None):
        self.rec.calls.append(Call("createlob", binds={"type": lob_type}))
        self.lob = _Lob()
        return self.lob


def make(exists=0, dim=384):
    """The model exists ``exists`` times before the load, always after it."""
    state = {"n": 0}

    def count(call):
        state["n"] += 1
        return [(exists if state["n"] == 1 else 1,)]

    rec = Recorder({"sql:from all_mining_models": count, "sql:vector_dimension_count": [(dim,)]})
    return rec, Conn(rec)


@pytest.fixture
def onnx(tmp_path):
    p = tmp_path / "m.onnx"
    p.write_bytes(b"\x08\x07" + b"x" * 100)
    return p


def test_load_model_call(onnx, monkeypatch):
    monkeypatch.setattr(models, "_CHUNK", 40)
    rec, conn = make()
    assert models.load_model(conn, onnx, "all_minilm_l12_v2") == 384
    sqls = [c for c in rec.of("execute")]
    load = next(c for c in sqls if "LOAD_ONNX_MODEL" in c.name)
    assert load.name == models.LOAD_SQL
    assert "model_name => :model_name, model_data => :model_data, metadata => JSON(:metadata)" in load.name
    assert load.binds["model_name"] == "ALL_MINILM_L12_V2"
    assert load.binds["model_data"] is conn.lob
    assert json.loads(load.binds["metadata"]) == models.DEFAULT_METADATA
    assert [c.binds["type"] for c in rec.of("createlob")] == [oracledb.DB_TYPE_BLOB]
    assert conn.lob.pieces[0][0] == 1 and [o for o, _ in conn.lob.pieces] == [1, 41, 81]
    assert b"".join(d for _, d in conn.lob.pieces) == onnx.read_bytes()
    assert not any("DROP_ONNX_MODEL" in c.name for c in sqls)
    assert 'vector_embedding("ALL_MINILM_L12_V2"' in sqls[-1].name


def test_existing_model_needs_replace(onnx):
    rec, conn = make(exists=1)
    with pytest.raises(RuntimeError, match="--replace"):
        models.load_model(conn, onnx, "M1")
    assert not any("LOAD_ONNX_MODEL" in c.name for c in rec.of("execute"))
    rec, conn = make(exists=1)
    models.load_model(conn, onnx, "app.M1", replace=True)
    names = [c.name for c in rec.of("execute")]
    drop = next(i for i, c in enumerate(rec.of("execute")) if c.name == models.DROP_SQL and c.binds["model_name"] == "APP.M1")
    assert drop < next(i for i, c in enumerate(rec.of("execute")) if "LOAD_ONNX_MODEL" in c.name
                       and c.binds["model_name"] == "APP.M1")
    # dba33 F10: the file is loaded and probed under a scratch name (then dropped) before the old model goes
    loads = [c.binds["model_name"] for c in rec.of("execute") if "LOAD_ONNX_MODEL" in c.name]
    drops = [c.binds["model_name"] for c in rec.of("execute") if c.name == models.DROP_SQL]
    assert len(loads) == 2 and loads[0].startswith("APP.OMNEW_") and loads[1] == "APP.M1"
    assert drops == [loads[0], "APP.M1"]
    assert names.index(models.DROP_SQL) > next(i for i, n in enumerate(names) if "vector_dimension_count" in n)
    exists = rec.of("execute")[0]
    assert exists.binds == {"owner": "APP", "name": "M1"}


def test_non_embedding_model_is_not_probed(onnx):
    rec, conn = make()
    assert models.load_model(conn, onnx, "M1", metadata='{"function": "regression"}') is None
    assert not any("vector_dimension_count" in c.name for c in rec.of("execute"))


@pytest.mark.parametrize("name", ["1abc", "a b", "x;drop", "a." + "b" * 124, "", "a.b.c", "\"Q\""])
def test_bad_names(name):
    with pytest.raises(ValueError, match="not a valid model name"):
        models.check_model_name(name)


def test_names_limits():
    assert models.check_model_name("s" * 128 + "." + "m" * 123) == ("S" * 128 + "." + "M" * 123)


def test_bad_files(tmp_path):
    with pytest.raises(FileNotFoundError, match="no such file"):
        models.check_model_file(tmp_path / "missing.onnx")
    with pytest.raises(ValueError, match="not a file"):
        models.check_model_file(tmp_path)
    (tmp_path / "e.onnx").write_bytes(b"")
    with pytest.raises(ValueError, match="empty"):
        models.check_model_file(tmp_path / "e.onnx")
    (tmp_path / "z.zip").write_bytes(b"PK\x03\x04rest")
    with pytest.raises(ValueError, match="unzip"):
        models.check_model_file(tmp_path / "z.zip")


@pytest.mark.parametrize("meta,msg", [("{", "not valid JSON"), ("[1]", "JSON object"),
                                      ('{"embeddingOutput": "e"}', "needs \"function\"")])
def test_bad_metadata(meta, msg):
    with pytest.raises(ValueError, match=msg):
        models.parse_metadata(meta)


@pytest.fixture
def cli(monkeypatch):
    rec, conn = make()
    seen = []

    def connect(dsn, user, pw):
        seen.append(dsn)
        return conn

    monkeypatch.setattr(dbcli, "connect", connect)
    monkeypatch.setenv("ORAMEM_PASSWORD", "pw")
    return rec, seen


def test_cli_loads(cli, onnx):
    rec, _ = cli
    res = CliRunner().invoke(dbcli.db, ["--dsn", "h/p", "--user", "u", "load-model", str(onnx), "--name", "emb"])
    assert res.exit_code == 0, res.output
    assert "model EMB loaded: 384-d embeddings" in res.output


@pytest.mark.parametrize("args,hint", [(["missing.onnx", "--name", "emb"], "FILE"),
                                       (["{f}", "--name", "bad name"], "--name"),
                                       (["{f}", "--name", "emb", "--metadata", "{}"], "--metadata")])
def test_cli_argument_errors_before_connecting(cli, onnx, args, hint):
    _, seen = cli
    args = [a.replace("{f}", str(onnx)) for a in args]
    res = CliRunner().invoke(dbcli.db, ["--dsn", "h/p", "--user", "u", "load-model", *args])
    assert res.exit_code == 2 and hint in res.output
    assert seen == []


def test_cli_existing_model(cli, onnx):
    rec, _ = cli
    rec.answers["sql:from all_mining_models"] = lambda call: [(1,)]
    res = CliRunner().invoke(dbcli.db, ["--dsn", "h/p", "--user", "u", "load-model", str(onnx), "--name", "emb"])
    assert res.exit_code == 1 and "--replace" in res.output


def test_replace_keeps_the_old_model_when_the_database_refuses_the_file(onnx):
    """dba33 F10: --replace dropped the old model first; a file the database then refused left the
    schema without the model (every OracleDBEmbedder and HYBRID store on it failing)."""
    from .fakes import db_error

    def refuse(call):
        raise db_error(1031, "insufficient privileges")  # any refusal of LOAD_ONNX_MODEL

    rec, conn = make(exists=1)
    rec.answers = {"sql:LOAD_ONNX_MODEL": refuse, **rec.answers}
    with pytest.raises(oracledb.DatabaseError):
        models.load_model(conn, onnx, "M1", replace=True)
    assert not [c for c in rec.of("execute") if c.name == models.DROP_SQL and c.binds["model_name"] == "M1"]
    loads = [c.binds["model_name"] for c in rec.of("execute") if "LOAD_ONNX_MODEL" in c.name]
    assert len(loads) == 1 and loads[0].startswith("OMNEW_")


def test_replace_refuses_the_model_a_store_embeds_with(onnx):
    """dba33 F10: replacing a HYBRID store's embedding model (or the model of a store's recorded
    OracleDBEmbedder) under its name mixes two models' vectors in that store (and the drop breaks
    its writes meanwhile): refused, nothing changed."""
    rec, conn = make(exists=1)
    rec.answers["oramem_admin.list_stores"] = json.dumps([
        {"memory_store_id": "SEM", "search_strategy": "hybrid", "embedding_model": "ALL_MINILM_L12_V2"},
        {"memory_store_id": "VEC", "search_strategy": "vector", "embedding_model": None,
         "embedder": {"kind": "oracle-db", "model": "all_minilm_l12_v2", "dimension": 384}},
        {"memory_store_id": "OTHER", "search_strategy": "hybrid", "embedding_model": "ANOTHER"}])
    with pytest.raises(RuntimeError, match=r"store\(s\) SEM, VEC \(.*nothing was changed"):
        models.load_model(conn, onnx, "all_minilm_l12_v2", replace=True)
    assert not [c for c in rec.of("execute") if "ONNX_MODEL" in c.name]
    assert not rec.of("createlob")
