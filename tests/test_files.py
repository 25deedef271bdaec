"""rtsched.files.FileLock's clean-up of a folder a failed run created and left empty."""
from __future__ import annotations

import pytest

from rtsched.files import FileLock, LockedError


def test_a_folder_the_lock_created_and_nothing_used_is_removed(tmp_path):
    out = tmp_path / "runs" / "a"
    with pytest.raises(RuntimeError):
        with FileLock(out / ".lock", remove_if_unused=True):
            assert (out / ".lock").exists()
            raise RuntimeError("failed before the first epoch")
    assert not (tmp_path / "runs").exists()  # both folders it created are gone
    assert tmp_path.exists()


def test_a_folder_with_other_files_or_made_before_is_kept(tmp_path):
    out = tmp_path / "a"
    with FileLock(out / ".lock", remove_if_unused=True):
        (out / "checkpoint.pt").write_bytes(b"x")
    assert (out / "checkpoint.pt").exists() and (out / ".lock").exists()
    made = tmp_path / "b"
    made.mkdir()
    with FileLock(made / ".lock", remove_if_unused=True):
        pass
    assert made.is_dir()  # not created by the lock: kept (the lock file may stay)
    plain = tmp_path / "c"
    with FileLock(plain / ".lock"):
        pass
    assert (plain / ".lock").exists()  # the default keeps everything


def test_the_lock_still_excludes_a_second_holder(tmp_path):
    with FileLock(tmp_path / "d" / ".lock", remove_if_unused=True):
        with pytest.raises(LockedError):
            with FileLock(tmp_path / "d" / ".lock"):
                pass


# ------------------------------------------------------------------------ special files and a full disk
import errno
import json
import os
import stat
import threading
from pathlib import Path

from rtsched import files
from rtsched.cli import main
from rtsched.files import WriteError, atomic_write_bytes, atomic_write_text, target_kind

REPO = Path(__file__).resolve().parents[1]
SAMPLE = str(REPO / "traces" / "lublin_256_sample.swf")
NULL, FULL = (1, 3), (1, 7)  # Linux's major/minor numbers of /dev/null and /dev/full


def _device_copy(folder: Path, name: str, numbers: tuple[int, int]) -> Path:
    """A character device with the numbers of /dev/null or /dev/full in a temporary folder (the
    real ones are never written by these tests: a bug would replace the system's device)."""
    path = folder / name
    try:
        os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(*numbers))
    except (PermissionError, OSError):
        pytest.skip("making a device node needs root")
    return path


def _is_char_device(path: Path) -> bool:
    return stat.S_ISCHR(os.lstat(path).st_mode)


def test_a_character_device_is_written_into_never_replaced(tmp_path, capsys):
    null = _device_copy(tmp_path, "null", NULL)
    atomic_write_text(null, "hello\n")
    assert _is_char_device(null) and target_kind(null) == "direct"
    for extension in ("", ".parquet"):  # the CSV and the Parquet writer alike
        dev = null if not extension else _device_copy(tmp_path, "null" + extension, NULL)
        rc = main(["simulate", SAMPLE, "--policy", "fcfs", "--first-n", "30", "--json", "--schedule-out", str(dev)])
        assert rc == 0 and _is_char_device(dev), capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["null", "null.parquet"]  # no temporary left beside


def test_a_full_device_reports_no_space_left_naming_it(tmp_path, capsys):
    full = _device_copy(tmp_path, "full", FULL)
    with pytest.raises(WriteError) as info:
        atomic_write_bytes(full, b"x" * 10)
    assert info.value.errno == errno.ENOSPC and isinstance(info.value, OSError)
    assert str(info.value).startswith(f"{full}: cannot write: no space left on device")
    rc = main(["simulate", SAMPLE, "--policy", "fcfs", "--first-n", "30", "--json", "--schedule-out", str(full)])
    err = capsys.readouterr().err
    assert rc == 1 and err.count("\n") == 1 and str(full) in err and "no space left" in err and "Traceback" not in err
    assert _is_char_device(full)


def test_a_fifo_is_written_into_and_stays_a_fifo(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    received = []
    reader = threading.Thread(target=lambda: received.append(Path(fifo).read_bytes()))
    reader.start()
    atomic_write_text(fifo, "line 1\nline 2\n")
    reader.join(timeout=30)
    assert received == [b"line 1\nline 2\n"] and stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_a_link_stays_a_link_and_its_file_gets_the_content(tmp_path):
    target = tmp_path / "real.txt"
    target.write_text("old\n")
    link = tmp_path / "link.txt"
    link.symlink_to(target)
    atomic_write_text(link, "new\n")
    assert link.is_symlink() and target.read_text() == "new\n"
    dangling = tmp_path / "to-new.txt"
    dangling.symlink_to(tmp_path / "new.txt")
    atomic_write_text(dangling, "made\n")  # as open() would: the file the link names is created
    assert dangling.is_symlink() and (tmp_path / "new.txt").read_text() == "made\n"


def test_a_socket_is_refused(tmp_path):
    import socket

    path = tmp_path / "s.sock"
    sock = socket.socket(socket.AF_UNIX)
    try:
        sock.bind(str(path))
        with pytest.raises(WriteError, match="socket"):
            atomic_write_text(path, "x")
        assert stat.S_ISSOCK(os.lstat(path).st_mode)
    finally:
        sock.close()


@pytest.fixture
def full_disk(tmp_path, monkeypatch):
    """Every temporary file the atomic writers make is a link to a full device, so each writer
    (pandas, pyarrow, matplotlib, torch, zip, gzip) meets ENOSPC from its own write calls, exactly
    as on a full disk."""
    device_dir = tmp_path / "dev"
    device_dir.mkdir()
    try:
        full = _device_copy(device_dir, "full", FULL)
    except pytest.skip.Exception:
        full = Path("/dev/full")  # not root: the real one, which a non-root process cannot replace or chmod
    made = files.temporary_name

    def temporary_on_a_full_disk(path):
        tmp = made(path)
        tmp.symlink_to(full)
        return tmp

    monkeypatch.setattr(files, "temporary_name", temporary_on_a_full_disk)
    out = tmp_path / "out"
    out.mkdir()
    return out


def _full_disk_writers(out: Path):
    """(what, target, write): the writers behind every command that writes a file."""
    from milp.instance import load_instance, save_instance
    from rtsched.io import read_workload
    from rtsched.io.swf import write_swf

    from milp.instance import random_instance

    wl = read_workload(SAMPLE, first_n=20)
    inst = REPO / "traces" / "instances" / "table3-00.json"
    tiny = out.parent / "tiny.json"  # solved in a fraction of a second (the model is written after the solve)
    tiny.write_text(json.dumps(random_instance(1, 2, 1, 4).to_dict()))  # not atomic_write: the disk is "full"
    sim = ["simulate", SAMPLE, "--policy", "fcfs", "--first-n", "20", "--json"]
    yield "--schedule-out csv", out / "s.csv", lambda p: main(sim + ["--schedule-out", str(p)])
    yield "--schedule-out parquet", out / "s.parquet", lambda p: main(sim + ["--schedule-out", str(p)])
    yield "--evalys-out", out / "e.csv", lambda p: main(sim + ["--evalys-out", str(p)])
    yield "traces convert", out / "c.swf", lambda p: main(["traces", "convert", SAMPLE, str(p)])
    yield "traces convert batsim", out / "b.json", lambda p: main(["traces", "convert", SAMPLE, str(p)])
    yield "traces generate", out / "g.swf.gz", lambda p: main(["traces", "generate", "--model", "lublin", "--jobs",
                                                               "30", "--out", str(p)])
    yield "swf library", out / "w.swf", lambda p: write_swf(wl, p)
    yield "instance", out / "i.json", lambda p: save_instance(load_instance(inst), p)
    yield "solve --write-model", out / "m.lp", lambda p: main(["solve", str(tiny), "--method", "milp",
                                                                 "--write-model", str(p)])
    yield "compare --cache", out / "cache", lambda p: main(["compare", str(inst), "--policies", "fcfs",
                                                           "--cache", str(p)])

    def figure(p):
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        from rtsched.plots import save_figure

        fig = plt.figure()
        try:
            save_figure(fig, p)  # what `experiment plot` writes each figure with
        finally:
            plt.close(fig)

    yield "experiment plot figure", out / "f.png", figure
    try:
        import torch  # noqa: F401
    except ImportError:
        return
    from rtsched.rl.trainer import PPOTrainer  # noqa: F401

    def checkpoint(p):
        from rtsched.files import atomic_write_stream

        atomic_write_stream(p, lambda fh: torch.save({"w": torch.zeros(50_000)}, fh))  # what PPOTrainer.save does

    yield "rl checkpoint", out / "checkpoint.pt", checkpoint


def test_every_writer_on_a_full_disk_says_so_in_one_line_and_leaves_nothing(full_disk, capsys):
    for what, target, write in _full_disk_writers(full_disk):
        try:
            rc = write(target)
        except WriteError as exc:  # a library writer: the error the command line prints as one line
            rc, err = 1, f"{exc}\n"
            capsys.readouterr()
        else:
            err = capsys.readouterr().err
        assert rc == 1, (what, err)
        assert err.count("\n") == 1 and "Traceback" not in err, (what, err)
        assert "no space left on device" in err and str(full_disk) in err, (what, err)
        left = [p for p in full_disk.rglob("*") if p.is_file() or p.is_symlink()]
        assert left == [], (what, left)  # nothing half-written, no temporary


def test_a_full_disk_keeps_the_old_file(full_disk):
    old = full_disk / "keep.txt"
    old.write_text("old\n")
    with pytest.raises(WriteError, match="nothing written"):
        atomic_write_text(old, "new\n")
    assert old.read_text() == "old\n" and [p.name for p in full_disk.iterdir()] == ["keep.txt"]


def test_a_ppo_checkpoint_on_a_full_disk(full_disk):
    pytest.importorskip("torch")
    from rtsched.rl import trainer as ppo

    class Trainer:  # the real save(), with a small state
        state = lambda self: {"x": 1}  # noqa: E731
        history = [{"epoch": 1}]

    with pytest.raises(WriteError, match="no space left"):
        ppo.PPOTrainer.save(Trainer(), str(full_disk / "checkpoint.pt"))
    assert list(full_disk.iterdir()) == []


def test_solve_write_model_writes_lp_and_mps_and_reports_a_failed_highs_write(tmp_path, monkeypatch, capsys):
    highspy = pytest.importorskip("highspy")
    from milp.instance import random_instance

    tiny = tmp_path / "tiny.json"
    tiny.write_text(json.dumps(random_instance(1, 2, 1, 4).to_dict()))
    for name, first in (("m.lp", b"\\"), ("m.mps", b"NAME")):  # LP opens with a comment, MPS with NAME
        assert main(["solve", str(tiny), "--method", "milp", "--write-model", str(tmp_path / name), "--json"]) == 0
        assert (tmp_path / name).read_bytes().lstrip().startswith(first), name
    monkeypatch.setattr(highspy.Highs, "writeModel", lambda self, path: highspy.HighsStatus.kError)
    rc = main(["solve", str(tiny), "--method", "milp", "--write-model", str(tmp_path / "x.lp"), "--json"])
    err = capsys.readouterr().err
    assert rc == 1 and err.count("\n") == 1 and "x.lp: cannot write: HiGHS could not write the model" in err
    assert not (tmp_path / "x.lp").exists()


def test_a_processs_open_file_is_appended_to_not_replaced(tmp_path):
    """``--schedule-out /dev/stdout`` with standard output sent to a file: /dev/stdout is a link
    through /proc to that open file, which is written through (appended), never replaced."""
    log = tmp_path / "log.txt"
    with open(log, "w") as fh:
        fh.write("head\n")
        fh.flush()
        link = tmp_path / "stdout"
        link.symlink_to(f"/proc/self/fd/{fh.fileno()}")
        assert target_kind(link) == "direct"
        atomic_write_text(link, "tail\n")
    assert log.read_text() == "head\ntail\n" and link.is_symlink()
    assert target_kind(log) == "replace" and target_kind(tmp_path / "new") == "replace"


def test_a_system_error_outside_the_writers_is_still_one_line(monkeypatch, capsys):
    from rtsched.cli import traces as cli_traces

    def full(args):
        raise OSError(errno.ENOSPC, "No space left on device", "/somewhere/runs")

    monkeypatch.setattr(cli_traces, "stats", full)
    assert main(["traces", "stats", SAMPLE]) == 1
    assert capsys.readouterr().err == "rtsched traces stats: error: no space left on device: /somewhere/runs\n"

    def library(args):
        raise OSError("a library's own message, no errno")

    monkeypatch.setattr(cli_traces, "stats", library)
    with pytest.raises(OSError, match="library's own"):  # not dressed up as a system error
        main(["traces", "stats", SAMPLE])
