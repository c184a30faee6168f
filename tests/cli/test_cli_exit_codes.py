"""Issue 25 item 4: the CLI maps errors to exit statuses by class (oramem/cli/group.py
EXIT_CODES, documented in the README after the command-line examples): 2 a bad argument, 1 a store/service/file error,
3 a busy database; an error that is not oramem's (a bug) keeps its traceback."""

from __future__ import annotations

import click
import pytest
from click.testing import CliRunner

from oramem.cli.group import OramemGroup


def _raising(exc: BaseException) -> click.Group:
    group = OramemGroup()

    @group.command("boom")
    def boom() -> None:
        raise exc

    return group


def _cases():
    from oramem import ArgumentError, ArgumentTypeError, StoreBusy, StoreClosed, StoreError
    from oramem.embedders import EmbeddingServiceError
    from oramem.embedders.onnx import ModelNotAvailable
    from oramem.knowledge.errors import LLMError
    from oramem.trust.firewall import FirewallRejected

    return [
        (ArgumentError("bad value"), 2), (ArgumentTypeError("bad type"), 2), (ValueError("legacy"), 2),
        (FirewallRejected("refused by policy", []), 2),
        (StoreError("no such store"), 1), (StoreClosed("closed"), 1), (EmbeddingServiceError("503", url="http://x"), 1),
        (ModelNotAvailable("no model"), 1), (LLMError("llm down"), 1), (OSError("disk"), 1),
        (StoreBusy("locked"), 3),
    ]


@pytest.mark.parametrize("exc,code", _cases(), ids=lambda v: type(v).__name__ if isinstance(v, BaseException) else str(v))
def test_exit_status_by_class(exc, code, monkeypatch):
    monkeypatch.delenv("ORAMEM_DEBUG", raising=False)
    result = CliRunner().invoke(_raising(exc), ["boom"])
    assert result.exit_code == code, result.output
    assert result.stderr.startswith("Error: ") and str(exc) in result.stderr
    assert "Traceback" not in result.output


def test_a_bug_keeps_its_traceback(monkeypatch):
    monkeypatch.delenv("ORAMEM_DEBUG", raising=False)
    result = CliRunner().invoke(_raising(KeyError("oops")), ["boom"])
    assert isinstance(result.exception, KeyError)  # not turned into a clean "Error:" line


def test_a_locked_database_exits_3(tmp_path, monkeypatch):
    """A real lock: another connection holds the write lock longer than the wait."""
    from oramem.cli import cli
    from oramem.sqlite import connection
    from oramem.sqlite._sqlite import sqlite3

    db = str(tmp_path / "busy.db")
    assert CliRunner().invoke(cli, ["--db", db, "--embed-dim", "8", "add", "first"]).exit_code == 0
    # the wait for the lock, 30 s by default (the default argument of Database.__init__)
    monkeypatch.setattr(connection.Database.__init__, "__defaults__", (0.2,))
    holder = sqlite3.connect(db, isolation_level=None)
    try:
        holder.execute("BEGIN IMMEDIATE")
        result = CliRunner().invoke(cli, ["--db", db, "--embed-dim", "8", "add", "second"])
    finally:
        holder.close()
    assert result.exit_code == 3, result.output
    assert "lock" in result.stderr
