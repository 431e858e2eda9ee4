"""What bench.concurrency and bench.quality read from a job: the causes of a status short of COMPLETED,
and how the jobs are shared between the teams."""

from __future__ import annotations

from bench.concurrency import Job, Run, interleaved, pooled_teams, team_counts, team_goals
from bench.partial_causes import job_causes
from bench.quality import GOALS


def test_causes_come_from_the_jobs_own_record_and_repeat_across_jobs() -> None:
    status = {
        "status": "PARTIAL",
        "current_phase": {
            "phase_name": "PARTIAL",
            "phase_description": "Research completed with some sources or connectors unavailable, or "
            "stopped at its cost budget",
        },
    }
    results = {
        "execution_summary": {"failed_connectors": ["arxiv", "crossref"]},
        "audit_trail_summary": {
            "audit_log": [
                {
                    "event": "CONNECTOR_FAILED",
                    "detail": "arxiv: request budget exhausted waiting for the provider rate limit "
                    "(next slot in 13.2 s)",
                },
                {"event": "EXTRACTION_FAILED", "detail": "https://doi.example/10.1/x: HTTP 404 from host"},
                {"event": "EXTRACTION_TIMEOUT", "detail": "https://pdf.example/y: timed out after 20 s"},
            ]
        },
        "autonomous_decisions": [
            {"decision_type": "BUDGET_REACHED", "action_taken": "Skipped: 2 search queries not run"},
            {"decision_type": "ADAPTIVE_REFINEMENT", "action_taken": "Generated 3 refined search queries"},
        ],
    }
    assert job_causes(status, results) == [
        "connector failed: arxiv: request budget exhausted waiting for the provider rate limit "
        "(next slot in N s)",
        "extraction extraction_timeout: timed out after 20 s",
        "connector failed: crossref",
        "budget_reached: Skipped: 2 search queries not run",
    ]


def test_a_specific_phase_description_and_a_failure_reason_are_causes() -> None:
    status = {
        "status": "FAILED",
        "current_phase": {"phase_description": "not run: arXiv's rate budget (3 queries)"},
        "failure_reason": "States.Timeout",
    }
    assert job_causes(status, {"failure_reason": "States.Timeout"}) == [
        "phase: not run: arXiv's rate budget (3 queries)",
        "failed: States.Timeout",
    ]


def test_the_teams_share_the_jobs_seventy_twenty_ten() -> None:
    assert team_counts(1) == {"A": 1, "B": 0, "C": 0}
    assert team_counts(10) == {"A": 7, "B": 2, "C": 1}
    assert team_counts(50) == {"A": 35, "B": 10, "C": 5}


def test_each_teams_first_goal_is_the_same_whatever_the_run() -> None:
    answerable = [goal for goal in GOALS if goal.expected]
    for team in range(3):
        assert team_goals(answerable, team, 1)[0] == team_goals(answerable, team, 35)[0]
    assert len({team_goals(answerable, team, 1)[0].goal_id for team in range(3)}) == 3


def test_the_teams_submit_in_proportional_turns() -> None:
    answerable = [goal for goal in GOALS if goal.expected]
    plan = {name: team_goals(answerable, index, n) for index, (name, n) in enumerate(team_counts(10).items())}
    order = [team for team, _ in interleaved(plan)]
    assert sorted(order) == sorted("AAAAAAABBC") and order.index("C") < 7 and order.index("B") < 3


def test_pooled_medians_take_every_job_of_the_repeated_runs_against_the_solo_median() -> None:
    def run(times: dict[str, list[float]]) -> Run:
        jobs = [Job(team, "g", seconds=t, status="COMPLETED") for team, ts in times.items() for t in ts]
        return Run("10 at once", len(jobs), jobs, 60.0, {}, False)

    runs = [run({"A": [40.0, 50.0], "C": [26.0]}), run({"A": [60.0], "C": [20.0]}), run({"C": [23.0]})]
    teams = pooled_teams(runs, {"A": 20.0, "C": 12.5})
    assert teams["C"]["jobs"] == 3 and teams["C"]["median_seconds"] == 23.0
    assert teams["C"]["ratio_to_solo"] == 23.0 / 12.5
    assert teams["A"]["median_seconds"] == 50.0 and teams["B"]["jobs"] == 0
