"""`python -m functions.local_runtime` as a child process serving loopback HTTP, for the restart tests:
started on a state directory, stopped with the signal a test chooses (SIGTERM: a clean shutdown;
SIGKILL: no shutdown hook runs)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import time

import httpx

from functions.common.resources import REPO_ROOT

START_SECONDS = 90


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class LocalRuntime:
    def __init__(self, state_dir: os.PathLike[str] | str, env: dict[str, str]) -> None:
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        environment = {**os.environ, **env, "LOCAL_STATE_DIR": str(state_dir), "PYTHONUNBUFFERED": "1"}
        # a file, not a pipe: a chatty runtime never blocks on a full pipe nobody reads
        self._log = tempfile.TemporaryFile()  # noqa: SIM115  (closed by stop)
        self.process = subprocess.Popen(
            [sys.executable, "-m", "functions.local_runtime", "--port", str(self.port)],
            cwd=REPO_ROOT,
            env=environment,
            stdout=self._log,
            stderr=subprocess.STDOUT,
        )
        self.output = ""
        deadline = time.monotonic() + START_SECONDS
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise AssertionError(f"the runtime exited: {self.stop()[-3000:]}")
            try:
                httpx.get(f"{self.base}/api/schedules", timeout=2)  # any answer (401 here): serving
                return
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        self.stop(signal.SIGKILL)
        raise AssertionError(f"the runtime did not answer within {START_SECONDS} s")

    def printed(self) -> str:
        """What it has printed so far."""
        if self._log.closed:
            return self.output
        self._log.flush()
        with open(self._log.fileno(), "rb", closefd=False) as log:
            log.seek(0)
            return log.read().decode(errors="replace")

    def stop(self, how: signal.Signals = signal.SIGKILL) -> str:
        """Send `how` (unless it has exited) and wait for the exit; what it printed."""
        if self.process.poll() is None:
            self.process.send_signal(how)
        self.process.wait(timeout=60)
        if not self._log.closed:
            self._log.seek(0)
            self.output = self._log.read().decode(errors="replace")
            self._log.close()
        return self.output

    def kill(self) -> None:
        self.stop(signal.SIGKILL)
