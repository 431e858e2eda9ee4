"""Benchmark: a PDF decompression bomb against the local runtime on loopback, and another team's small
upload at the same time.

    .venv/bin/python -m bench.pdf_bomb [--inflated-mb 200] [--rounds 2] [--no-byte-limits]

The server (`python -m functions.local_runtime`, as `make run` starts it, with `AUTH=required`) runs as a
subprocess on a free port; two teams are created through `/admin/teams`. Each round, team A sends the
bomb (a ~0.7 MB PDF whose page content inflates to `--inflated-mb` MB, tests/support/pdfgen.bomb_pdf)
twice, by upload (`POST /v1/documents`) and by extraction URL (`POST /api/tools/extract`, the bomb
served by a local web), and 0.3 s after each, team B uploads a small PDF it has not uploaded before.
`--no-byte-limits` lifts the decompressed-byte limits on the server, so that the bomb runs into the
worker's memory and time limits instead (what a bomb the stream measurement misses would do).

Printed per request: status, seconds to the answer, the error body's code; and the RSS of the server
with every process it started (the parse workers included), sampled every 20 ms: idle, peak, and after
the bombs. Targets (issue 19): peak <= idle + 500 MB, the bomb answered 4xx within 20 s, the small
upload within 3 s.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from bench.load import _start_server, free_port, stop_runtime
from tests.support.pdfgen import bomb_pdf, sample_paper_pdf
from tests.support.scholarly_web import ScholarlyWeb

ADMIN_TOKEN = "bench-bomb-admin"
ADMIN = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
TARGET_PEAK_MB = 500.0
TARGET_BOMB_SECONDS = 20.0
TARGET_SMALL_SECONDS = 3.0
SMALL_DELAY_SECONDS = 0.3


@dataclass
class Answer:
    label: str
    status: int
    seconds: float
    code: str


def _tree_rss_mb(root: int) -> float:
    """RSS of `root` and all its descendants (Linux /proc), in MB."""
    children: dict[int, list[int]] = {}
    rss: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError, ValueError, IndexError):
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            pid = int(entry.name)
            children.setdefault(int(fields[1]), []).append(pid)
            rss[pid] = int(fields[21]) * os.sysconf("SC_PAGE_SIZE")
    total, stack = 0, [root]
    while stack:
        pid = stack.pop()
        total += rss.get(pid, 0)
        stack.extend(children.get(pid, []))
    return total / (1024 * 1024)


class Sampler:
    def __init__(self, pid: int, interval: float = 0.02) -> None:
        self.pid, self.interval = pid, interval
        self.peak = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> Sampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, _tree_rss_mb(self.pid))
            self._stop.wait(self.interval)


def _wait_ready(base: str, server: subprocess.Popen[bytes], timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    with httpx.Client(base_url=base, timeout=5) as client:
        while time.monotonic() < deadline:
            if server.poll() is not None:
                raise SystemExit(f"the server exited with {server.returncode}")
            with contextlib.suppress(httpx.HTTPError):
                if client.get("/v1/health").status_code == 200:
                    return
            time.sleep(0.3)
    raise SystemExit("the server did not become ready")


def _team(client: httpx.Client, name: str) -> dict[str, str]:
    created = client.post("/admin/teams", json={"name": name, "tier": "standard"}, headers=ADMIN)
    if created.status_code != 201:
        raise SystemExit(f"creating team {name}: {created.status_code} {created.text[:200]}")
    return {"Authorization": f"Bearer {created.json()['token']}"}


def _send(client: httpx.Client, label: str, method: str, path: str, **kwargs: Any) -> Answer:
    started = time.perf_counter()
    response = client.request(method, path, **kwargs)
    seconds = time.perf_counter() - started
    code = ""
    if response.status_code >= 400:
        error = response.json().get("error")
        code = str(error.get("code") if isinstance(error, dict) else error)
    return Answer(label, response.status_code, seconds, code)


def _upload(client: httpx.Client, headers: dict[str, str], name: str, data: bytes, label: str) -> Answer:
    files = {"file": (name, data, "application/pdf")}
    return _send(client, label, "POST", "/v1/documents", files=files, headers=headers)


def run(args: argparse.Namespace) -> int:
    bomb = bomb_pdf(args.inflated_mb * 1024 * 1024)
    with ScholarlyWeb() as web:
        web.set_response("/reports/figures.pdf", bomb, content_type="application/pdf")
        port = free_port()
        env = {
            **os.environ,
            **web.env(),
            # the team-supplied URL's own allow-list where the runtime has one (issue 19, finding 6)
            "EXTRACT_ALLOW_PRIVATE_HOSTS": web.host_port,
            "AUTH": "required",
            "ADMIN_TOKEN": ADMIN_TOKEN,
            "CLIENT_RATE_LIMIT_PER_MINUTE": "1000000",
            "PORT": str(port),
        }
        if args.no_byte_limits:
            env |= {
                "EXTRACT_PDF_MAX_STREAM_BYTES": str(1 << 40),
                "EXTRACT_PDF_MAX_DOCUMENT_BYTES": str(1 << 40),
            }
        env.pop("AWS_ENDPOINT_URL", None)
        server, log = _start_server(env, port, args.server_log)
        base = f"http://127.0.0.1:{port}"
        try:
            _wait_ready(base, server)
            with httpx.Client(base_url=base, timeout=120) as client:
                team_a, team_b = _team(client, "bench-bomb-a"), _team(client, "bench-bomb-b")
                warm = _upload(client, team_b, "warm.pdf", sample_paper_pdf("Warm-up upload"), "warm-up")
                if warm.status != 201:
                    raise SystemExit(f"the warm-up upload answered {warm.status}")
                idle = _tree_rss_mb(server.pid)
                answers: list[tuple[Answer, Answer]] = []
                with Sampler(server.pid) as sampler, ThreadPoolExecutor(max_workers=2) as pool:
                    for round_number in range(args.rounds):
                        for how in ("upload", "url"):
                            small_pdf = sample_paper_pdf(f"Small paper {round_number} {how}")
                            if how == "upload":
                                attack = pool.submit(
                                    _upload, client, team_a, "figures.pdf", bomb, "bomb by upload"
                                )
                            else:
                                body = {"source_url": web.url("/reports/figures.pdf")}
                                attack = pool.submit(
                                    _send, client, "bomb by URL", "POST", "/api/tools/extract",
                                    json=body, headers=team_a,
                                )  # fmt: skip
                            time.sleep(SMALL_DELAY_SECONDS)
                            small = _upload(client, team_b, "small.pdf", small_pdf, "small upload (team B)")
                            answers.append((attack.result(), small))
                time.sleep(1.0)
                after = _tree_rss_mb(server.pid)
        finally:
            stop_runtime(server)
            log.close()
    return _report(args, len(bomb), answers, idle, sampler.peak, after)


def _report(
    args: argparse.Namespace,
    bomb_bytes: int,
    answers: list[tuple[Answer, Answer]],
    idle: float,
    peak: float,
    after: float,
) -> int:
    print(
        f"pdf bomb: a {bomb_bytes / 1024:.0f} KB PDF inflating to {args.inflated_mb} MB, {args.rounds} round(s), "
        f"byte limits {'off' if args.no_byte_limits else 'on'} (python {sys.version.split()[0]}, "
        f"{os.cpu_count()} CPUs)"
    )
    for attack, small in answers:
        for answer in (attack, small):
            print(f"  {answer.label:<24} {answer.status}  {answer.seconds:6.2f} s  {answer.code}")
    increase = peak - idle
    print(
        f"server RSS (with its parse workers): idle {idle:.0f} MB, peak {peak:.0f} MB (+{increase:.0f} MB), "
        f"1 s after the last bomb {after:.0f} MB ({after - idle:+.0f} MB)"
    )
    slowest_bomb = max(attack.seconds for attack, _ in answers)
    slowest_small = max(small.seconds for _, small in answers)
    refused = all(400 <= attack.status < 500 for attack, _ in answers)
    indexed = all(small.status == 201 for _, small in answers)
    ok = (
        increase <= TARGET_PEAK_MB
        and refused
        and slowest_bomb <= TARGET_BOMB_SECONDS
        and indexed
        and slowest_small <= TARGET_SMALL_SECONDS
    )
    print(
        f"targets: peak +{increase:.0f} MB (<= +{TARGET_PEAK_MB:.0f}), bombs 4xx {refused} in at most "
        f"{slowest_bomb:.2f} s (<= {TARGET_BOMB_SECONDS:.0f}), small uploads 201 {indexed} in at most "
        f"{slowest_small:.2f} s (<= {TARGET_SMALL_SECONDS:.0f}): {'MET' if ok else 'NOT MET'}"
    )
    return 0 if ok else 1


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--inflated-mb", type=int, default=200, help="what the bomb inflates to (default 200)"
    )
    parser.add_argument(
        "--rounds", type=int, default=2, help="bomb + small upload pairs per route (default 2)"
    )
    parser.add_argument(
        "--no-byte-limits", action="store_true", help="lift the decompressed-byte limits on the server"
    )
    parser.add_argument("--server-log", default="/tmp/bench-pdf-bomb-server.log", help="the server's output")
    raise SystemExit(run(parser.parse_args()))


if __name__ == "__main__":
    main()
