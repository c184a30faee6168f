"""``oramem models pull`` with HF_HUB_OFFLINE set said only that it was set (trial 31): the
error now says how to get the model."""
from __future__ import annotations

import pytest
from click.testing import CliRunner

from oramem.cli import cli
from oramem.embedders.hub import ModelOffline, pull


def test_offline_pull_says_how_to_get_the_model(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(ModelOffline) as info:
        pull(cache_dir=tmp_path)
    assert "HF_HUB_OFFLINE is set: unset it to fetch the model" in str(info.value)
    assert "copy the model cache directory" in str(info.value)
    monkeypatch.setenv("ORAMEM_MODEL_CACHE", str(tmp_path))
    result = CliRunner().invoke(cli, ["models", "pull"])
    assert result.exit_code == 1 and "unset it to fetch the model" in result.stderr
