"""The job service's fakes: the execution starter, recording what it would start (no Step Functions), and
the job store in memory."""

from __future__ import annotations

import json
import threading
from typing import Any, Unpack

from functions.common.errors import Conflict
from functions.orchestrate.models import TERMINAL_RANK
from functions.orchestrate.store import JobChanges


class RecordingStarter:
    def __init__(self) -> None:
        self.started: list[tuple[str, dict[str, Any]]] = []

        self.execution_state: str | None = "RUNNING"
        self.status_checks = 0

    def start(self, name: str, payload: dict[str, Any]) -> str:
        self.started.append((name, payload))
        return f"arn:aws:states:us-east-1:123456789012:execution:research:{name}"

    def execution_status(self, execution_arn: str) -> str | None:
        self.status_checks += 1
        return self.execution_state


class InMemoryJobStore:
    """The same semantics as DynamoDbJobStore, for unit tests."""

    def __init__(self) -> None:
        self.items: dict[tuple[str, str], dict[str, Any]] = {}
        self.keys: dict[tuple[str, str], tuple[str, str]] = {}
        self.applied: dict[tuple[str, str], set[str]] = {}
        self._lock = threading.Lock()

    def create(self, item: dict[str, Any]) -> bool:
        with self._lock:
            key = (item["team_id"], item["job_id"])
            if key in self.items:
                return False
            self.items[key] = json.loads(json.dumps(item, default=str))
            return True

    def get(self, team_id: str, job_id: str) -> dict[str, Any] | None:
        with self._lock:
            item = self.items.get((team_id, job_id))
            return json.loads(json.dumps(item)) if item is not None else None

    def update(self, team_id: str, job_id: str, **changes: Unpack[JobChanges]) -> bool:
        status, once = changes.get("status"), changes.get("once")
        with self._lock:
            item = self.items.get((team_id, job_id))
            if item is None or item["status_rank"] >= TERMINAL_RANK:
                return False
            applied = self.applied.setdefault((team_id, job_id), set())
            if once is not None and once in applied:
                return False
            if status is not None:
                if item["status_rank"] > status.rank:
                    return False
                item["status"], item["status_rank"] = status.value, status.rank
            item.update(json.loads(json.dumps(changes.get("set_fields") or {}, default=str)))
            for name, amount in (changes.get("add_counters") or {}).items():
                item[name] = item.get(name, 0) + amount
            for name, items in (changes.get("append") or {}).items():
                item[name] = item.get(name, []) + json.loads(json.dumps(items, default=str))
            if once is not None:
                applied.add(once)
            return True

    def claim_idempotency_key(self, team_id: str, key: str, job_id: str, fingerprint: str) -> str | None:
        with self._lock:
            if (team_id, key) not in self.keys:
                self.keys[(team_id, key)] = (job_id, fingerprint)
                return None
            existing_job, existing_fingerprint = self.keys[(team_id, key)]
        if existing_fingerprint != fingerprint:
            raise Conflict("this Idempotency-Key was used for a different request")
        return existing_job

    def release_idempotency_key(self, team_id: str, key: str, job_id: str) -> None:
        with self._lock:
            if self.keys.get((team_id, key), ("", ""))[0] == job_id:
                del self.keys[(team_id, key)]

    def waiting_at_checkpoint(self, team_id: str) -> list[dict[str, Any]]:
        with self._lock:
            return [
                json.loads(json.dumps(item))
                for (team, _), item in self.items.items()
                if team == team_id and item.get("awaiting_checkpoint")
            ]
