"""The local state directory: one runtime at a time (an exclusive flock, taken before the journal is
read), and nothing in it readable by other users."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import boto3
import pytest
from moto import mock_aws

from functions.local_runtime import durable
from functions.local_runtime.durable import LocalState, StateDirInUse, StateDirLock


@pytest.fixture(autouse=True)
def _inactive() -> Iterator[None]:
    yield
    durable.deactivate()  # `load` makes its state the journal's recorder


@pytest.fixture
def loose_umask() -> Iterator[None]:
    previous = os.umask(0o022)  # files world-readable unless created otherwise
    try:
        yield
    finally:
        os.umask(previous)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_a_second_state_on_a_held_directory_refuses_before_touching_the_journal(tmp_path: Path) -> None:
    first = LocalState(tmp_path)
    first.load()
    journal = tmp_path / durable.JOURNAL
    # what the running one wrote since its start, a torn last line included: a second load would compact it
    with open(journal, "ab") as handle:
        handle.write(b'{"t":"ddb","r":"us-east-1","k":["t","a",null],"v":null}\n{"torn')
    before = journal.read_bytes()

    second = LocalState(tmp_path)
    with pytest.raises(StateDirInUse) as refused:
        second.load()
    assert refused.value.holder_pid == os.getpid()
    assert f"pid {os.getpid()}" in str(refused.value) and "\n" not in str(refused.value)
    assert journal.read_bytes() == before

    first.close()
    third = LocalState(tmp_path)  # the lock goes with the holder
    third.load()
    third.close()


def test_the_lock_file_names_its_holder(tmp_path: Path) -> None:
    lock = StateDirLock(tmp_path)
    lock.acquire()
    try:
        assert (tmp_path / durable.LOCK_FILE).read_text().strip() == str(os.getpid())
        with pytest.raises(StateDirInUse):
            StateDirLock(tmp_path).acquire()
    finally:
        lock.release()
    StateDirLock(tmp_path).acquire()  # released: free again (and released at exit by the kernel)


@pytest.mark.usefixtures("loose_umask")
def test_the_directory_is_0700_and_its_files_0600(tmp_path: Path) -> None:
    directory = tmp_path / "state"
    (directory / durable.BLOBS).mkdir(mode=0o755, parents=True)
    os.chmod(directory, 0o755)
    digest = "ab" * 32
    old_blob = directory / durable.BLOBS / digest  # as an older runtime left them: world-readable
    old_blob.write_bytes(b"body")
    journal = directory / durable.JOURNAL
    journal.write_text(
        f'{{"t":"s3","r":"global","k":["bucket","key"],"v":{{"blob":"{digest}","meta":{{}}}}}}\n'
    )
    for path in (old_blob, journal):
        os.chmod(path, 0o644)

    with mock_aws():
        boto3.client("s3", region_name="us-east-1").create_bucket(Bucket="bucket")
        state = LocalState(directory)
        assert state.load()["s3_objects"] == 1
        new_blob = directory / durable.BLOBS / ("cd" * 32)
        durable._atomic_write(new_blob, b"another body", fsync=False)  # how every blob is written
        state.close()

    assert _mode(directory) == 0o700 and _mode(directory / durable.BLOBS) == 0o700
    for path in (journal, old_blob, new_blob, directory / durable.LOCK_FILE):
        assert _mode(path) == 0o600, path
