"""Fires due research schedules on the local runtime, as EventBridge Scheduler does on AWS.

Schedules are kept where the API put them (the embedded Scheduler of moto, through the same
`EventBridgeScheduleStore` as on AWS); a daemon thread looks every few seconds for fires that fell due
since its last look (every team's schedules) and starts one job per schedule and look, for the
schedule's team and naming the schedule (as Scheduler's target input does on AWS). Missed fires while the runtime was down
are not replayed; a fire is started at most once (the idempotency key names schedule and fire time).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime

from functions.common.observability import get_logger
from functions.schedules.service import ScheduleStore, StoredSchedule, due_fires

logger = get_logger("local-scheduler")


def start_with_job_service(schedule: StoredSchedule, idempotency_key: str) -> str:
    """The default starter: the orchestrate job service, exactly as `POST /api/agent/execute` does."""
    from functions.orchestrate.wiring import start_job

    return start_job(
        str(schedule.job_input.get("research_goal", "")),
        dict(schedule.job_input.get("scope_parameters") or {}),
        idempotency_key,
        team_id=schedule.team_id,
        source="schedule",
        schedule_id=schedule.schedule_id,
        callback_url=schedule.callback_url,
    )


@dataclass
class LocalScheduler:
    store: ScheduleStore
    start_job: Callable[[StoredSchedule, str], str] = start_with_job_service  # (schedule, idempotency key)
    poll_seconds: float = 5.0
    clock: Callable[[], datetime] = lambda: datetime.now(UTC)
    started_jobs: list[str] = field(default_factory=list, init=False)  # every job id this scheduler started
    _last_look: datetime | None = field(default=None, init=False)
    _stop: threading.Event = field(default_factory=threading.Event, init=False)
    _thread: threading.Thread | None = field(default=None, init=False)

    def tick(self) -> list[str]:
        """Start the jobs that fell due since the last tick; returns their job ids."""
        now = self.clock()
        since = self._last_look or now
        self._last_look = now
        started: list[str] = []
        for schedule in self.store.list_all():
            if not schedule.enabled:
                continue
            fires = list(due_fires(schedule, max(since, schedule.created_at), now))
            if not fires:
                continue
            fire = fires[-1]  # several missed fires collapse into one job, like a paused runtime resuming
            try:
                job_id = self.start_job(schedule, f"schedule:{schedule.schedule_id}:{fire.isoformat()}")
            except Exception:  # one broken schedule must not stop the others
                logger.exception(
                    "scheduled job did not start", schedule_id=schedule.schedule_id, team_id=schedule.team_id
                )
                continue
            logger.info(
                "scheduled job started",
                team_id=schedule.team_id,
                schedule_id=schedule.schedule_id,
                job_id=job_id,
                fire=fire.isoformat(),
            )
            started.append(job_id)
        self.started_jobs.extend(started)
        return started

    def start(self) -> LocalScheduler:
        self._last_look = self.clock()
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name="local-scheduler", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=self.poll_seconds + 5)
            self._thread = None

    def _run(self) -> None:
        while not self._stop.wait(self.poll_seconds):
            try:
                self.tick()
            except Exception:  # keep the runtime's scheduler alive through a transient store error
                logger.exception("local scheduler tick failed")


def start_local_scheduler(poll_seconds: float = 5.0) -> LocalScheduler:
    """For `python -m functions.local_runtime`, after EmbeddedAws has started (it sets STATE_MACHINE_ARN)."""
    from functions.schedules.wiring import schedule_store

    return LocalScheduler(store=schedule_store(), poll_seconds=poll_seconds).start()
