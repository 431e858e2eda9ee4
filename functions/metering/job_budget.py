"""A research job's budgets as its steps meet them: asked before each search round, extraction and
synthesis, and held when a schedule's job starts (functions/metering/budget.py decides).

Metering never fails a job: a budget check that fails lets the work run, and is logged.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from functions.common.observability import get_logger
from functions.metering.budget import BudgetExceeded, Budgets
from functions.metering.estimate import Unit

logger = get_logger("metering")


@dataclass
class JobBudget:
    """The job's and its team's budgets; without a gate (budgets not configured) every unit runs."""

    gate: Budgets | None = None

    def refusal(
        self, team_id: str, job_id: str, unit: Unit, *, sources: int = 0, pending: int = 0
    ) -> str | None:
        """None when the budgets allow the next unit (its estimate is then reserved), else why not.
        `pending`: units of the same Map after this one (they run even when the budget refuses)."""
        if self.gate is None:
            return None
        try:
            refused = self.gate.admit(team_id, job_id, unit, sources=sources, pending=pending)
        except Exception:
            logger.warning("budget check failed; the unit runs", job_id=job_id, unit=unit, exc_info=True)
            return None
        return None if refused is None else refused.reason

    def affordable_extractions(self, team_id: str, job_id: str, wanted: int) -> int:
        """How many of `wanted` selected sources the job can start extracting (each Map iteration costs,
        even one the budget then refuses)."""
        if self.gate is None or not wanted:
            return wanted
        try:
            return self.gate.affordable_extractions(team_id, job_id, wanted)
        except Exception:
            logger.warning("budget check failed; every source is extracted", job_id=job_id, exc_info=True)
            return wanted

    def hold(self, team_id: str, job_id: str, estimate: Mapping[str, Any] | None) -> None:
        """A fired schedule's job holds its share of the team's month as a submitted one does; one that
        cannot afford its quote's low figure raises BudgetExceeded. A hold that fails otherwise lets the
        job run."""
        if self.gate is None or estimate is None:
            return
        try:
            self.gate.hold(team_id, job_id, estimate)
        except BudgetExceeded:
            raise
        except Exception:
            logger.warning("budget hold failed; the job runs", job_id=job_id, exc_info=True)


def skipped_work(queries: int, sources: int, synthesis: int) -> str | None:
    """What a job skipped for its budget, in words; None when it skipped nothing."""
    if not (queries or sources or synthesis):
        return None
    skipped = [
        *([f"{queries} search quer{'y' if queries == 1 else 'ies'} not run"] if queries else []),
        *([f"{sources} source{'' if sources == 1 else 's'} not extracted"] if sources else []),
        *(["synthesis skipped"] if synthesis else []),
    ]
    return ", ".join(skipped)
