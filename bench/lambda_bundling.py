"""Builds every Lambda asset as a deploy does (pip, manylinux aarch64 wheels, CPython 3.13) and prints
per function: seconds, files, distributions, unzipped and zipped size. Run twice to see the cache.

    .venv/bin/python bench/lambda_bundling.py [--cache-dir DIR]
"""

from __future__ import annotations

import argparse
import io
import os
import time
import zipfile
from pathlib import Path

from functions.common import resources
from infra import bundling
from infra.config import API_FUNCTIONS, KB_INGEST, WEB_ADAPTER


def zipped_size(directory: Path) -> int:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(directory.rglob("*")):
            if path.is_file():
                archive.write(path, path.relative_to(directory))
    return len(buffer.getvalue())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--cache-dir", help="XDG_CACHE_HOME to use (a fresh one measures a cold build)")
    args = parser.parse_args()
    if args.cache_dir:
        os.environ["XDG_CACHE_HOME"] = args.cache_dir
    # (entry, extra distributions, executables): a streaming function is its ASGI app behind the Web Adapter
    builds: dict[str, tuple[str, tuple[str, ...], dict[str, str]]] = {}
    for spec in API_FUNCTIONS:
        if spec.streams:
            builds[spec.logical_id] = (
                spec.entry,
                (WEB_ADAPTER.server_distribution,),
                {WEB_ADAPTER.entry_script: bundling.web_adapter_start_script(spec.asgi_app)},
            )
        else:
            builds[spec.logical_id] = (spec.entry, (), {})
    builds.update({spec.logical_id: (spec.handler, (), {}) for spec in resources.STEP_FUNCTIONS})
    builds[KB_INGEST.logical_id] = (KB_INGEST.handler, (), {})
    locked = bundling.LockedDependencies()
    total_started = time.perf_counter()
    print(f"cache: {bundling.cache_root()}")
    print(f"{'function':<26}{'seconds':>8}{'files':>7}{'dists':>7}{'unzipped MB':>13}{'zipped MB':>11}")
    for logical_id, (entry, extra, executables) in builds.items():
        started = time.perf_counter()
        sources = bundling.analyse(entry, locked=locked, extra_distributions=extra)
        asset = bundling.build_asset(sources, "full", executables=executables)
        seconds = time.perf_counter() - started
        files = sum(1 for path in asset.rglob("*") if path.is_file())
        print(
            f"{logical_id:<26}{seconds:>8.1f}{files:>7}{len(sources.requirements):>7}"
            f"{bundling.directory_size(asset) / 1e6:>13.1f}{zipped_size(asset) / 1e6:>11.1f}"
        )
    print(f"total {time.perf_counter() - total_started:.1f} s")


if __name__ == "__main__":
    main()
