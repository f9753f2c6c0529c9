"""The seq counter of a job whose registry is on another host (registry.remote_seq)."""

from __future__ import annotations

import multiprocessing
import os
from pathlib import Path

import pytest

from registry.errors import InvalidEvent, RegistryError
from registry.remote_seq import next_seq, seq_path


def take(directory: str, count: int) -> list[int]:
    return [next_seq(Path(directory), "abcdef12") for _ in range(count)]


def test_seqs_start_at_1_and_survive_a_new_process(tmp_path: Path) -> None:
    assert [next_seq(tmp_path, "abcdef12") for _ in range(3)] == [1, 2, 3]
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        assert pool.apply(take, (str(tmp_path), 2)) == [4, 5]
    assert next_seq(tmp_path, "0000beef") == 1, "each job counts on its own"
    assert seq_path(tmp_path, "abcdef12").stat().st_mode & 0o777 == 0o600


def test_panes_of_one_job_never_share_a_seq(tmp_path: Path) -> None:
    """4 processes x 50 seqs at once: 200 distinct seqs, 1..200."""
    with multiprocessing.get_context("fork").Pool(4) as pool:
        taken = pool.starmap(take, [(str(tmp_path), 50)] * 4)
    assert sorted(seq for run in taken for seq in run) == list(range(1, 201))


def test_a_bad_job_id_or_a_damaged_file_is_refused_and_left_alone(tmp_path: Path) -> None:
    for bad in ("../../x1", "ABCDEF12", "abc"):
        with pytest.raises(InvalidEvent, match="8 lowercase hex"):
            next_seq(tmp_path, bad)
    path = seq_path(tmp_path, "abcdef12")
    path.parent.mkdir(parents=True)
    path.write_text("12x\n")
    with pytest.raises(RegistryError, match="is damaged"):
        next_seq(tmp_path, "abcdef12")
    assert path.read_text() == "12x\n"


def test_each_seq_is_on_disk_before_it_is_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The value is synced before next_seq returns (the event goes out after), and a new
    counter file's directory entry too: a power cut must not hand out a seq twice."""
    synced: list[str] = []
    real_fdatasync, real_fsync = os.fdatasync, os.fsync

    def fdatasync(fd: int) -> None:
        synced.append(os.readlink(f"/proc/self/fd/{fd}"))
        real_fdatasync(fd)

    def fsync(fd: int) -> None:
        synced.append(os.readlink(f"/proc/self/fd/{fd}"))
        real_fsync(fd)

    monkeypatch.setattr(os, "fdatasync", fdatasync)
    monkeypatch.setattr(os, "fsync", fsync)
    path = seq_path(tmp_path, "abcdef12").resolve()  # as /proc names it
    assert next_seq(tmp_path, "abcdef12") == 1
    assert synced == [str(path), str(path.parent)]
    synced.clear()
    assert next_seq(tmp_path, "abcdef12") == 2
    assert synced == [str(path)]
