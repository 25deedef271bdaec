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
