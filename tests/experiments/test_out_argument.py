"""``--out`` must name a directory: an empty or blank value is an argument error before any
computation (``Path("")`` would silently write into the working directory)."""

from __future__ import annotations

import importlib
import os

import pytest

from experiments import EXPERIMENTS

MODULES = ("__main__", "link_prediction", *EXPERIMENTS)


@pytest.mark.parametrize("value", ["", "   "])
@pytest.mark.parametrize("name", MODULES)
def test_empty_out_is_an_argument_error(name, value, tmp_path, monkeypatch, capsys):
    main = importlib.import_module(f"experiments.{name}").main
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as info:
        main(["--out", value])
    assert info.value.code == 2
    assert f"argument --out: must name a directory, got {value!r}" in capsys.readouterr().err
    assert os.listdir(tmp_path) == []  # nothing written into the working directory


def test_out_with_a_nul_byte_is_an_argument_error(capsys):
    main = importlib.import_module("experiments.thm3_tv_bound").main
    with pytest.raises(SystemExit) as info:
        main(["--out", "a\0b"])
    assert info.value.code == 2 and "cannot hold a NUL byte" in capsys.readouterr().err
