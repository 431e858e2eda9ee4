"""Benchmark: research jobs on `python -m functions.local_runtime` killed (SIGKILL) in each of their
steps, against the same job run without a stop.

    .venv/bin/python -m bench.restart [--runs 2]

Each run starts one rapid job that chases citations and kills its runtime seven times, once in each
step (before Plan, after Search, before Screen, after Chase, before one source of the Extract Map, after
Synthesize, before Finalize; the kill points are exact: tests/support/restart_scenario.py), then lets an
eighth life finish it. Printed:
each job's final status, the states its JOB_RESUMED events name, the steps it was billed for next to the
uninterrupted job's, its cost (the Lambda part, billed by duration, apart: a step that runs first in a
fresh process runs cold, so a job restarted seven times spends longer in the same steps) and committed
amount, and the fault lines (ERROR, Exception=, Traceback) the runtimes printed.
"""

from __future__ import annotations

import argparse
import re
import tempfile
import time
from pathlib import Path

from tests.e2e.scholarly_topic import NO_POLITENESS, figure
from tests.support.restart_scenario import (
    HOLDS,
    FinishedJob,
    extractions,
    job_killed_in_each_step,
    resumed_states,
    serve_scenario,
    uninterrupted_job,
)
from tests.support.scholarly_web import ScholarlyWeb

FAULT = re.compile(r"\bERROR\b|Traceback|Exception=|NoSuchJsonPathError", re.IGNORECASE)


def _faults(job: FinishedJob) -> int:
    return sum(1 for line in job.printed.splitlines() if FAULT.search(line))


def _row(label: str, job: FinishedJob, seconds: float) -> None:
    usage = job.usage
    figure(
        f"{label:<28} {job.status['status']:<10} steps {usage['steps']} (extractions {extractions(job)})  "
        f"cost ${usage['cost_usd']:.6f} (Lambda ${usage['cost']['lambda_usd']:.6f} for "
        f"{usage['usage']['lambda_gb_seconds']:.2f} GB-s, the rest ${usage['cost_usd'] - usage['cost']['lambda_usd']:.6f})  "
        f"committed ${usage['committed_usd']:.6f}  fault lines in the last runtime's output {_faults(job)}  "
        f"{seconds:.1f} s"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=2, help="jobs killed in each step, one after another")
    args = parser.parse_args()
    print(NO_POLITENESS)
    with ScholarlyWeb() as web, tempfile.TemporaryDirectory() as scratch:
        serve_scenario(web)
        root = Path(scratch)
        started = time.monotonic()
        reference = uninterrupted_job(web, root / "uninterrupted")
        _row("uninterrupted", reference, time.monotonic() - started)
        completed = billed_alike = 0
        for run in range(args.runs):
            started = time.monotonic()
            signals = root / f"signals-{run}"
            signals.mkdir()
            job = job_killed_in_each_step(web, root / f"killed-{run}", signals)
            _row(f"killed in each step ({run + 1})", job, time.monotonic() - started)
            figure(
                f"{'':<28} resumed at {resumed_states(job)}; restart to next hold {[round(s, 1) for s in job.lives]} s"
            )
            completed += job.status["status"] == "COMPLETED"
            billed_alike += job.usage["steps"] == reference.usage["steps"]
        figure(
            f"{completed} of {args.runs} jobs killed in each of {len(HOLDS)} steps COMPLETED; {billed_alike} of {args.runs} "
            "billed for the same steps as the uninterrupted job"
        )


if __name__ == "__main__":
    main()
