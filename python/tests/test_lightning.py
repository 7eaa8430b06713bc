"""PyTorch Lightning: Trainer(strategy=DDPStrategy(process_group_backend="collcomm"), accelerator="cpu",
devices=2) fits a tiny model, and ends with the parameters of the same fit over Gloo."""
import os
import re
import subprocess
import sys

import pytest

pytest.importorskip("pytorch_lightning", reason="pytorch-lightning is not installed (SKIP_LIGHTNING=1)")

HERE = os.path.dirname(os.path.abspath(__file__))


def fit(backend):
    env = dict(os.environ, MASTER_ADDR="127.0.0.1", PYTHONWARNINGS="ignore")
    env.pop("MASTER_PORT", None)
    out = subprocess.run([sys.executable, os.path.join(HERE, "lightning_fit.py"), backend], cwd=HERE, env=env,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    m = re.search(r"RESULT backend=(\S+) loss=(\S+) checksum=(\S+)", out.stdout)
    assert m, out.stdout[-3000:] + out.stderr[-3000:]
    return m.group(1), float(m.group(2)), m.group(3)


def test_lightning_ddp_fit_matches_gloo():
    name, loss, checksum = fit("collcomm")
    assert name == "collcomm"
    gname, gloss, gchecksum = fit("gloo")
    assert gname == "gloo"
    assert checksum == gchecksum, f"collcomm {checksum} vs gloo {gchecksum}"
    assert loss == pytest.approx(gloss, rel=1e-6)
