"""``bench/bench_rl.py --train-to-target`` stopped by Ctrl-C: one line saying where the finished epochs
are and that the same command resumes, exit status 130, no traceback (the runs checkpoint every epoch)."""
from __future__ import annotations

import sys

from conftest import REPO

SAMPLE = str(REPO / "traces" / "lublin_256_sample.swf")


def test_ctrl_c_during_training_is_one_line_and_status_130(tmp_path, monkeypatch, capsys):
    sys.path.insert(0, str(REPO / "bench"))
    import bench_rl

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(bench_rl, "bench_train_to_target", interrupted)
    out = str(tmp_path / "run")
    assert bench_rl.main(["--trace", SAMPLE, "--train-to-target", "--out", out]) == 130
    err = capsys.readouterr().err.strip()
    assert err == f"bench_rl: interrupted; the finished epochs are in {out}: the same command resumes"
