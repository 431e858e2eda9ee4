"""Cold-start import benchmark: the fresh-process import time of every Lambda handler module against the
bare framework floor, measured in the same run.

    .venv/bin/python -m bench.cold_start [--repeats 9] [--top 0] [--only NAME ...]

Handlers: every function the CDK app deploys (infra/config.py's API functions, the team authorizer, the
knowledge-base ingest, and the step Lambdas of functions/common/resources.py). The answer function runs
under the Lambda Web Adapter, so its entry is the ASGI app module uvicorn imports. The schedules have no
Lambda of their own: EventBridge Scheduler starts the research state machine directly.

Floor (the issue's definition): a fresh process importing only FastAPI, Mangum, boto3 and httpx. It
applies to every handler: the API handlers are FastAPI apps behind Mangum; the authorizer, the steps and
the ingest are not, and need no more than boto3 and httpx, so the framework floor is an upper bound for
them (the `boto3+httpx` line is printed for reference). Target: every handler within 1.15x the floor.

Each measurement is a new interpreter (`python -c`) timing only the import: wall time (`perf_counter`) and
the CPU time the process used (`process_time`). The rounds interleave the floor and the handlers so that
machine drift hits all of them alike; each figure is the median. The target is judged on CPU time: an
import is CPU-bound (bytecode and page cache are warm), and on a shared 2-core machine the wall time also
counts the time other processes held the CPU, which moves single runs by 2x. Step Lambdas share one
module and are measured once. `--top N` also prints the N slowest modules of each handler under
`-X importtime`; `--only` measures only the handlers whose logical id or module contains one of the
given names (the floor is always measured).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from functions.common import resources  # noqa: E402

TARGET_RATIO = 1.15
FLOOR_MODULES = ("fastapi", "mangum", "boto3", "httpx")
REFERENCE_MODULES = ("boto3", "httpx")


@dataclass(frozen=True)
class Handler:
    name: str  # the function's logical id
    module: str  # what the Lambda runtime (or uvicorn) imports first


def handlers() -> list[Handler]:
    """The handler modules of every deployed function, read from the same registries as the CDK app."""
    # infra.config is plain data (no aws_cdk); imported here, never in the measured processes
    from infra.config import API_FUNCTIONS, KB_INGEST, TEAM_AUTHORIZER

    found = [Handler(spec.logical_id, spec.entry.rpartition(".")[0]) for spec in API_FUNCTIONS]
    found.append(Handler(TEAM_AUTHORIZER.logical_id, TEAM_AUTHORIZER.handler.rpartition(".")[0]))
    if REPO.joinpath(*KB_INGEST.handler.rpartition(".")[0].split(".")).with_suffix(".py").is_file():
        found.append(Handler(KB_INGEST.logical_id, KB_INGEST.handler.rpartition(".")[0]))
    found.extend(
        Handler(spec.logical_id, spec.handler.rpartition(".")[0]) for spec in resources.STEP_FUNCTIONS
    )
    return found


_TIMER = (
    "import time, importlib\n"
    "w, c = time.perf_counter(), time.process_time()\n"
    "for m in {modules!r}: importlib.import_module(m)\n"
    "print(time.perf_counter() - w, time.process_time() - c)\n"
)


# As deployed (infra/components/functions.py `SINGLE_THREADED_BLAS`, set on the knowledge base's
# functions): the ingest imports numpy, whose BLAS threads would otherwise start and spin at import and
# count in the process's CPU time on this machine though not on Lambda.
SINGLE_THREADED_BLAS = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
SINGLE_THREADED_PREFIX = "functions.rag."


def _environment(modules: tuple[str, ...] = ()) -> dict[str, str]:
    env = dict(os.environ)
    env.setdefault("AWS_DEFAULT_REGION", "us-east-1")
    env.setdefault("AWS_REGION", env["AWS_DEFAULT_REGION"])
    env.setdefault("POWERTOOLS_LOG_LEVEL", "WARNING")
    env["PYTHONDONTWRITEBYTECODE"] = "0"  # "0" lets the imports write bytecode (the shell may say "1")
    if any(module.startswith(SINGLE_THREADED_PREFIX) for module in modules):
        env.update(SINGLE_THREADED_BLAS)
    return env


@dataclass(frozen=True)
class Sample:
    wall: float  # seconds
    cpu: float  # seconds of CPU the importing process used (user + system)


def import_seconds(modules: tuple[str, ...]) -> Sample:
    """One fresh interpreter importing `modules`; the seconds the imports took."""
    out = subprocess.run(
        [sys.executable, "-c", _TIMER.format(modules=modules)],
        cwd=REPO,
        env=_environment(modules),
        capture_output=True,
        text=True,
        check=True,
    )
    wall, cpu = out.stdout.strip().splitlines()[-1].split()
    return Sample(float(wall), float(cpu))


def slowest_modules(module: str, top: int) -> list[tuple[float, str]]:
    """The `top` modules with the largest cumulative import time (s) under `-X importtime`."""
    out = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", f"import {module}"],
        cwd=REPO,
        env=_environment((module,)),
        capture_output=True,
        text=True,
        check=True,
    )
    rows: list[tuple[float, str]] = []
    for line in out.stderr.splitlines():
        if not line.startswith("import time:") or "cumulative" in line:
            continue
        _self_us, cumulative_us, name = line.removeprefix("import time:").split("|")
        rows.append((int(cumulative_us) / 1e6, name.strip()))
    return sorted(rows, reverse=True)[:top]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=9, help="fresh processes per module (median)")
    parser.add_argument("--top", type=int, default=0, help="print the N slowest imports of each handler")
    parser.add_argument(
        "--only", nargs="+", default=[], metavar="NAME", help="only handlers whose id or module contains NAME"
    )
    args = parser.parse_args(argv)

    found = [
        handler
        for handler in handlers()
        if not args.only or any(name in handler.name or name in handler.module for name in args.only)
    ]
    if not found:
        parser.error(f"no handler matches {' '.join(args.only)}")
    by_module: dict[str, list[str]] = {}
    for handler in found:
        by_module.setdefault(handler.module, []).append(handler.name)
    measured: dict[str, tuple[str, ...]] = {
        "floor": FLOOR_MODULES,
        "reference": REFERENCE_MODULES,
        **{module: (module,) for module in by_module},
    }
    for modules in measured.values():
        import_seconds(modules)  # bytecode caches written, page cache warm: every round starts alike
    samples: dict[str, list[Sample]] = {key: [] for key in measured}
    for _ in range(args.repeats):
        for key, modules in measured.items():
            samples[key].append(import_seconds(modules))

    def median(key: str) -> Sample:
        return Sample(
            statistics.median(sample.wall for sample in samples[key]),
            statistics.median(sample.cpu for sample in samples[key]),
        )

    floor, reference = median("floor"), median("reference")
    print(
        f"fresh-process import, median of {args.repeats} (python {sys.version.split()[0]}, {os.cpu_count()} CPUs)"
    )
    print(f"floor: import {', '.join(FLOOR_MODULES)}  wall {floor.wall:.3f} s  cpu {floor.cpu:.3f} s")
    print(
        f"reference: import {', '.join(REFERENCE_MODULES)}  wall {reference.wall:.3f} s  "
        f"cpu {reference.cpu:.3f} s ({reference.cpu / floor.cpu:.2f}x)"
    )
    print()
    rows = [
        (", ".join(names) if len(names) == 1 else f"{names[0]} +{len(names) - 1} steps", module)
        for module, names in by_module.items()
    ]
    width = max(len(name) for name, _ in rows)
    mod_width = max(len(module) for _, module in rows)
    print(
        f"{'handler':<{width}}  {'module':<{mod_width}}  {'wall s':>6}  {'x floor':>7}  "
        f"{'cpu s':>6}  {'x floor':>7}  target"
    )
    missed = 0
    for name, module in rows:
        figure = median(module)
        wall_ratio, cpu_ratio = figure.wall / floor.wall, figure.cpu / floor.cpu
        ok = cpu_ratio <= TARGET_RATIO
        missed += not ok
        print(
            f"{name:<{width}}  {module:<{mod_width}}  {figure.wall:>6.3f}  {wall_ratio:>6.2f}x  "
            f"{figure.cpu:>6.3f}  {cpu_ratio:>6.2f}x  {'ok' if ok else 'MISSED'}"
        )
    print()
    print(
        f"target: every handler <= {TARGET_RATIO}x the floor (CPU time): "
        f"{len(rows) - missed}/{len(rows)} handler modules met ({len(found)} functions)"
    )
    if args.top:
        for name, module in rows:
            print(f"\n{name} ({module}): slowest imports (cumulative s)")
            for seconds, imported in slowest_modules(module, args.top):
                print(f"  {seconds:7.3f}  {imported}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
