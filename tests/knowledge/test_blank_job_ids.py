"""SC-2.2 (red33, after left34): a job id that is only white space names no job. get_job('')
and retry_jobs(['']) were refused, but get_job(' ') answered None and retry_jobs([' ']) (and
`oramem kg jobs retry --job-id ' '`) answered 0 retried, exit 0: a blank id slipped through as
a job that was not found instead of the caller's mistake."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from oramem.cli import cli


@pytest.mark.parametrize("blank", [" ", "\t\r", "\u2028"])
def test_a_white_space_only_job_id_is_refused(km, blank):
    with pytest.raises(ValueError, match="not only white space"):
        km.get_job(blank)
    with pytest.raises(ValueError, match="not only white space"):
        km.retry_jobs([blank])
    with pytest.raises(ValueError, match="not only white space"):
        km.retry_jobs(["job-1", blank])
    with pytest.raises(TypeError):  # not a list of strings: as before
        km.retry_jobs([None])
    assert km.get_job(" x ") is None and km.retry_jobs([" x "]) == 0  # a visible character: an id, not found


def test_cli_jobs_retry_refuses_a_white_space_only_job_id(tmp_path):
    path = str(tmp_path / "kg.db")
    runner = CliRunner()
    res = runner.invoke(cli, ["--db", path, "--embed-dim", "64", "--json", "knowledge", "write", "a1", "Ana keeps bees",
                              "--speaker", "Pedro", "--background"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.output)["job_id"]
    res = runner.invoke(cli, ["kg", "jobs", "retry", "--sqlite", path, "--store-id", "DEFAULT", "--job-id", " "])
    assert res.exit_code == 2, res.output
    assert "not only white space" in res.output and "Traceback" not in res.output
