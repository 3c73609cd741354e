"""PyTorch programs (cases.py) on torch's engine and on actorgrad's, each in
its own process: every tensor bitwise equal, every event list the same."""

import os
import subprocess
import sys

import pytest
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import cases  # noqa: E402


def run(case, engine, tmp_path):
    out = tmp_path / f"{case}.{engine}.pt"
    subprocess.run([sys.executable, os.path.join(HERE, "cases.py"), case, engine, str(out)],
                   check=True, timeout=600)
    return torch.load(out)


@pytest.mark.parametrize("case", sorted(cases.CASES))
def test_same_as_stock(case, tmp_path):
    stock = run(case, "stock", tmp_path)
    for engine in ("actorgrad", "actorgrad_torch_method"):  # install(), install(fast_backward=False)
        ours = run(case, engine, tmp_path)
        assert ours.pop("actorgrad calls")[0] > 0, engine
        assert sorted(stock) == sorted(ours), engine
        for key, expected in stock.items():
            got = ours[key]
            if isinstance(expected, torch.Tensor):
                assert isinstance(got, torch.Tensor), (engine, key)
                assert expected.dtype == got.dtype and expected.shape == got.shape, (engine, key)
                assert torch.equal(expected, got), f"{engine} {key}: max abs diff {(expected - got).abs().max()}"
            else:
                assert expected == got, (engine, key)
