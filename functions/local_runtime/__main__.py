"""`python -m functions.local_runtime`: every API on http://127.0.0.1:$PORT over an embedded AWS."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

# Every job's forward passes and parses share this one process, one pass per core at a time
# (functions/common/outbound/fair_slots.py): a BLAS pool per pass would only oversubscribe the cores (measured
# under load: about three times the CPU per embedded document with two threads). Set before numpy loads.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import uvicorn

from functions.common.tenancy import DEFAULT_TEAM
from functions.local_runtime.admission import Admission, limit_from_env
from functions.local_runtime.aws import EmbeddedAws
from functions.local_runtime.durable import StateDirInUse, state_dir_from_env
from functions.local_runtime.gateway import Gateway, load_function_apps
from functions.local_runtime.scheduler import start_local_scheduler


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--host", default=os.environ.get("HOST", "127.0.0.1"))
    parser.add_argument("--port", type=int, default=int(os.environ.get("PORT", "8000")))
    parser.add_argument(
        "--state-dir",
        default=None,
        help="where data is kept across restarts (default: LOCAL_STATE_DIR; set it empty to keep nothing)",
    )
    args = parser.parse_args()
    limit = limit_from_env()
    state_dir = args.state_dir if args.state_dir is not None else state_dir_from_env()
    state_dir = state_dir or None  # "" keeps everything in memory

    aws = EmbeddedAws(state_dir=state_dir)
    try:
        aws.start()  # takes LOCAL_STATE_DIR's lock first, before the journal is read
    except StateDirInUse as exc:
        raise SystemExit(str(exc)) from None  # one line on stderr, exit status 1
    try:
        gateway = Gateway(load_function_apps())
        _announce(aws, gateway, state_dir, args.host, args.port, limit)
        scheduler = start_local_scheduler()  # due research schedules fire here as on EventBridge Scheduler
        try:
            uvicorn.run(
                Admission(gateway, limit, team_of=gateway.admission_team) if limit else gateway,
                host=args.host,
                port=args.port,
                log_level="info",
                timeout_graceful_shutdown=5,
            )
        finally:
            scheduler.stop()
    finally:
        aws.stop()


def _announce(
    aws: EmbeddedAws, gateway: Gateway, state_dir: str | Path | None, host: str, port: int, limit: int | None
) -> None:
    """What the runtime serves and how: where its state is kept, its address, auth and admission."""
    if state_dir is None:
        print("state kept in memory only: LOCAL_STATE_DIR=<dir> keeps it across restarts", flush=True)
    else:
        print(f"state kept in {state_dir}: restored {aws.restored}", flush=True)
        if aws.resumed_jobs:
            print(
                f"{len(aws.resumed_jobs)} job(s) waiting at a checkpoint when the runtime stopped: waiting again",
                flush=True,
            )
        if aws.continued_jobs:
            print(
                f"{len(aws.continued_jobs)} job(s) were running when the runtime stopped: going on where "
                "they were",
                flush=True,
            )
        if aws.interrupted_jobs:
            print(
                f"{len(aws.interrupted_jobs)} job(s) could not go on after the runtime stopped: now FAILED",
                flush=True,
            )
    print(f"embedded AWS ready: state machines {sorted(aws.state_machine_arns)}", flush=True)
    print(
        f"serving every API on http://{host}:{port} (docs at /docs, the research console at /console/); Ctrl-C stops",
        flush=True,
    )
    if gateway.auth_required:
        print("AUTH=required: every request needs `Authorization: Bearer <team token>`", flush=True)
    else:
        print(
            f"no token needed: requests without one belong to the default team {DEFAULT_TEAM} "
            "(AUTH=required enforces team tokens)",
            flush=True,
        )
    if limit:
        print(
            f"at most {limit} requests served at once, the rest queue, served team by team "
            "(LOCAL_MAX_CONCURRENT_REQUESTS)",
            flush=True,
        )


if __name__ == "__main__":
    main()
