"""ProcessOnce builds its value once however many threads ask at the same moment (functions/common/process_once.py)."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

from functions.common.process_once import ProcessOnce


def test_threads_asking_together_share_one_value_until_reset() -> None:
    builds: list[object] = []
    start = threading.Barrier(8)

    def build() -> object:
        builds.append(object())
        return builds[-1]

    once = ProcessOnce(build)

    def ask() -> object:
        start.wait()
        return once.get()

    with ThreadPoolExecutor(max_workers=8) as pool:
        values = list(pool.map(lambda _: ask(), range(8)))
    assert len(builds) == 1 and all(value is builds[0] for value in values)
    once.reset()
    assert once.get() is builds[1] and len(builds) == 2
