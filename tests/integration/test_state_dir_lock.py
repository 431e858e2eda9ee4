"""A second `python -m functions.local_runtime` on a state directory in use refuses to start, with one
line naming the holder's pid, and leaves the journal as it found it."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from functions.local_runtime import durable
from functions.local_runtime.durable import StateDirLock

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def test_a_second_runtime_refuses_a_held_state_directory(tmp_path: Path) -> None:
    holder = StateDirLock(tmp_path)  # this test process plays the running runtime
    holder.acquire()
    journal = tmp_path / durable.JOURNAL
    journal.write_bytes(b'{"t":"ddb","r":"us-east-1","k":["t","a",null],"v":null}\n{"torn')
    before = journal.read_bytes()
    try:
        env = {**os.environ, "LOCAL_STATE_DIR": str(tmp_path), "PORT": str(_free_port())}
        second = subprocess.run(
            [sys.executable, "-m", "functions.local_runtime"],
            env=env,
            capture_output=True,
            text=True,
            timeout=100,
            check=False,
        )
    finally:
        holder.release()

    assert second.returncode == 1
    lines = second.stderr.strip().splitlines()
    assert len(lines) == 1, second.stderr
    assert f"pid {os.getpid()}" in lines[0] and str(tmp_path) in lines[0]
    assert "serving" not in second.stdout
    assert journal.read_bytes() == before
