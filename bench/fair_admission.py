"""Benchmark: another team's request behind one team's burst, in the local runtime's admission queue.

    .venv/bin/python -m bench.fair_admission [--burst 40] [--limit 8] [--work-ms 200]

The real `Admission` over the real `Gateway` (AUTH=required, tokens resolved by the gateway) serves, over
loopback HTTP (uvicorn), an app whose every request holds its slot for `--work-ms` (a sleep: what the
queue sees of a request is only how long it keeps its slot). Team A sends `--burst` requests at once;
while they queue, team B sends one. Printed: B's latency with the fair queue and with the arrival-order
queue it replaced (the same burst, B counted as one of A's), and A's last answer in each.
"""

from __future__ import annotations

import argparse
import asyncio
import socket
import threading
import time
from typing import Any

import httpx
import uvicorn
from fastapi import FastAPI

from functions.local_runtime.admission import Admission
from functions.local_runtime.gateway import Gateway

TOKENS = {"token-of-team-a": "team-aaaaaaaaaaaa", "token-of-team-b": "team-bbbbbbbbbbbb"}


def _app(work_seconds: float) -> FastAPI:
    app = FastAPI()

    @app.get("/v1/documents")
    async def documents() -> dict[str, Any]:
        await asyncio.sleep(work_seconds)
        return {"documents": []}

    return app


def _serve(admission: Admission) -> tuple[uvicorn.Server, int]:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(admission, host="127.0.0.1", port=port, log_level="warning"))
    threading.Thread(target=server.run, daemon=True).start()
    while not server.started:
        time.sleep(0.01)
    return server, port


async def _round(port: int, burst: int, b_token: str) -> tuple[float, float]:
    """Seconds until B's answer, and until A's last answer."""
    limits = httpx.Limits(max_connections=burst + 8)
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", limits=limits, timeout=120) as client:
        started = time.perf_counter()

        async def get(token: str) -> float:
            response = await client.get("/v1/documents", headers={"Authorization": f"Bearer {token}"})
            response.raise_for_status()
            return time.perf_counter() - started

        a_calls = [asyncio.create_task(get("token-of-team-a")) for _ in range(burst)]
        await asyncio.sleep(0.05)  # the burst is queued before B arrives
        b_seconds = await get(b_token)
        a_last = max(await asyncio.gather(*a_calls))
    return b_seconds, a_last


def measure(burst: int, limit: int, work_seconds: float, *, fair: bool) -> tuple[float, float]:
    gateway = Gateway({"bench": _app(work_seconds)}, auth_required=True, lookup=TOKENS.get)
    # the queue it replaced, arrival order for everyone: every request in one team's queue
    admission = (
        Admission(gateway, limit, team_of=gateway.admission_team)
        if fair
        else Admission(gateway, limit, team_of=_one_queue)
    )
    server, port = _serve(admission)
    try:
        b_token = "token-of-team-b"
        return asyncio.run(_round(port, burst, b_token))
    finally:
        server.should_exit = True


async def _one_queue(scope: Any) -> str:
    return "everyone"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--burst", type=int, default=40)
    parser.add_argument("--limit", type=int, default=8)
    parser.add_argument("--work-ms", type=float, default=200.0)
    args = parser.parse_args()
    work = args.work_ms / 1000
    print(f"team A: {args.burst} requests at once; team B: 1; {args.limit} slots; {args.work_ms:.0f} ms each")
    for fair in (False, True):
        b_seconds, a_last = measure(args.burst, args.limit, work, fair=fair)
        name = "per-team round robin" if fair else "arrival order (before)"
        print(f"{name:>24}: B answered after {b_seconds:.2f} s; A's last after {a_last:.2f} s")


if __name__ == "__main__":
    main()
