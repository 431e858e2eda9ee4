from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncGenerator
from dataclasses import replace
from typing import Any

from functions.common.llm import Completion, CompletionStream, StreamEnd, Usage
from functions.research.checking.gate import SINGLE_SOURCE_CONFIDENCE_CAP
from functions.research.checking.verifier import PARTIAL, SUPPORTED, UNSUPPORTED, verify_claim
from functions.research.job.result import SynthesisResult
from functions.research.job.synthesis import JOB_STAGES
from functions.research.job.synthesis import synthesize as synthesize_async
from functions.research.presets import DECIDE, JOB_SYNTHESIS_STAGES, RENDER, VERIFY, WRITE
from functions.research.presets import RED_TEAM as RED_TEAM_STAGE
from functions.research.trace import RED_TEAM, VERIFIER, WRITER, TraceRecorder
from functions.research.writing.attribution import speaks_for_itself
from functions.research.writing.report_writer import OTHER_FINDINGS
from tests.unit.orchestrate.fixtures import extracted, plan
from tests.unit.research.scripted_llm import ScriptedLlm

SOURCES = [
    extracted(
        1,
        [
            ("finding", "Block sparse attention reduced training time by 38% on long document benchmarks."),
            ("method", "We evaluate on three benchmarks in an ablation study with five seeds."),
            ("limitation", "A limitation of this study is that all benchmarks are in English."),
        ],
        methodology="An ablation study on three benchmarks.",
    ),
    extracted(
        2,
        [
            ("finding", "Block sparse attention kept accuracy within 0.4 points of dense attention."),
            ("finding", "Mixture of experts routing doubled throughput at equal compute."),
            ("future_work", "Future work should apply the router to decoder models."),
        ],
        methodology="Controlled experiments on 64 GPUs compared with a dense baseline.",
    ),
    extracted(
        3,
        [
            ("finding", "Mixture of experts routing lowered inference cost by 30% in our experiments."),
        ],
        methodology="A user study with 40 participants.",
    ),
]


def synthesize(*args: Any, **kwargs: Any) -> SynthesisResult:
    return asyncio.run(synthesize_async(*args, **kwargs))


def _quotes(result_evidence: list[dict[str, object]]) -> set[str]:
    return {str(item["quote"]) for item in result_evidence}


def test_extractive_synthesis_cites_only_evidence() -> None:
    result = synthesize(plan("rapid"), SOURCES).to_dict()
    ids = {item["evidence_id"] for item in result["evidence"]}
    assert all(re.fullmatch(r"ev-[0-9a-f]{10}", i) for i in ids)
    cited = set(re.findall(r"ev-[0-9a-f]{10}", result["executive_summary"] + result["synthesis_text"]))
    assert cited and cited <= ids
    assert result["refusal"] is False and 0 < result["confidence_score"] <= 1
    # Themes are the goal's facets (findings that name none come last), never terms cut from the quotes.
    assert result["primary_themes"] == ["Long documents", OTHER_FINDINGS]
    assert all(claim["verdict"] == SUPPORTED for claim in result["claims"])
    assert "Smith and Doe (2025) report that block sparse attention" in result["synthesis_text"]
    assert not speaks_for_itself(result["synthesis_text"])  # "our experiments", "this study" rewritten
    assert any("English" in gap for gap in result["gaps_identified"])
    assert result["methodologies"]["Ablation study"] == 1
    assert result["methodologies_found"] >= 3
    assert result["sources_analyzed"] == 3


def test_verification_needs_the_words_and_numbers_of_the_quote() -> None:
    quote = "Block sparse attention reduced training time by 38% on long document benchmarks."
    assert verify_claim(quote, [quote])[0] == SUPPORTED
    assert verify_claim("Block sparse attention reduced training time by 83%.", [quote])[0] == UNSUPPORTED
    assert verify_claim("Sparse attention reduced training time for documents in legal texts.", [quote])[
        0
    ] in (PARTIAL, UNSUPPORTED)
    assert verify_claim("Quantum computers factor primes.", [quote])[0] == UNSUPPORTED
    assert verify_claim("Anything.", [])[0] == UNSUPPORTED


def test_llm_sentences_are_checked_and_unsupported_ones_dropped() -> None:
    evidence_ids = [item["evidence_id"] for item in synthesize(plan("rapid"), SOURCES).to_dict()["evidence"]]
    first, second = evidence_ids[0], evidence_ids[3]
    answer = (
        "### Sparse attention\n\n"
        f"Block sparse attention reduced training time by 38% on long document benchmarks [{first}]. "
        f"Block sparse attention reduced training time by 75% [{first}]. "
        "Sparse attention is universally adopted [ev-ffffffffff].\n\n"
        "### Mixture of experts\n\n"
        f"Block sparse attention kept accuracy within 0.4 points of dense attention [{second}].\n\n"
        "### Gaps\n\n"
        f"Block sparse attention reduced training time by 38% [{first}]."
    )
    provider = ScriptedLlm(answer)
    result = synthesize(plan("rapid"), SOURCES, provider=provider).to_dict()
    assert result["writer"] == "llm:scripted"
    assert first in provider.prompts[0]
    dropped = [c for c in result["claims"] if not c["kept"]]
    assert {c["claim_text"] for c in dropped} == {
        "Block sparse attention reduced training time by 75%.",
        "Sparse attention is universally adopted.",
    }
    assert "75%" not in result["synthesis_text"] and "universally" not in result["synthesis_text"]
    assert "38%" in result["synthesis_text"]
    assert any("dropped after verification" in note for note in result["notes"])


def test_a_failing_provider_falls_back_to_the_extractive_writer() -> None:
    result = synthesize(plan("rapid"), SOURCES, provider=ScriptedLlm("", fail=True)).to_dict()
    assert result["writer"] == "extractive" and result["primary_themes"]
    assert "LLM writer failed" in result["notes"][0]


def test_one_source_with_verified_evidence_gives_a_capped_synthesis_with_a_caveat() -> None:
    result = synthesize(plan("rapid"), SOURCES[:1]).to_dict()
    assert result["refusal"] is False and result["claims"]
    assert 0 < result["confidence_score"] <= SINGLE_SOURCE_CONFIDENCE_CAP
    assert "Single-source caveat" in result["executive_summary"]
    assert any(note.startswith("single-source synthesis") for note in result["notes"])


def test_a_caller_demanding_more_sources_gets_a_refusal_with_the_reason() -> None:
    result = synthesize(plan("rapid"), SOURCES[:1], min_sources=2).to_dict()
    assert result["refusal"] is True
    assert "at least 2" in result["refusal_reason"]
    assert result["confidence_score"] == 0.0 and result["primary_themes"] == []
    assert "No synthesis was written" in result["executive_summary"]


def test_no_relevant_evidence_is_refused() -> None:
    empty = synthesize(plan("rapid"), []).to_dict()
    assert empty["refusal"] and empty["sources_analyzed"] == 0
    assert empty["refusal_reason"] == "No relevant source yielded usable evidence"
    unverifiable = synthesize(
        plan("rapid"),
        SOURCES[:1],
        provider=ScriptedLlm("### x\n\nTransformers cured 99% of cancers [ev-0000000000]."),
    ).to_dict()
    assert (
        unverifiable["refusal"]
        and unverifiable["refusal_reason"] == "No claim could be verified against the extracted evidence"
    )


def test_sources_that_match_only_one_concept_cannot_carry_a_synthesis_alone() -> None:
    single_concept = [(replace(candidate, goal_relevance=0.3), paper) for candidate, paper in SOURCES]
    refused = synthesize(plan("rapid"), single_concept).to_dict()
    assert refused["refusal"] is True
    assert "no source that addresses the goal as a whole" in refused["refusal_reason"]
    anchored = [(replace(SOURCES[0][0], goal_relevance=0.8), SOURCES[0][1]), *single_concept[1:]]
    assert synthesize(plan("rapid"), anchored).to_dict()["refusal"] is False


class SlowLlm(ScriptedLlm):
    """A model that answers long after the step's model budget (as SmolLM2 on a loaded machine)."""

    def __init__(self, answer: str, delay: float) -> None:
        super().__init__(answer, verdict="supported")
        self.delay = delay

    async def complete(self, system: str, prompt: str, **kwargs: Any) -> Completion:
        await asyncio.sleep(self.delay)
        return await super().complete(system, prompt, **kwargs)

    def stream(self, system: str, prompt: str, **kwargs: Any) -> CompletionStream:
        async def late() -> AsyncGenerator[str | StreamEnd, None]:
            await asyncio.sleep(self.delay)
            yield self.answer
            yield StreamEnd(Usage(1, 1), self.model)

        return CompletionStream(late(), self.model)


def test_a_slow_model_gives_way_to_the_extractive_writer_within_the_budget() -> None:
    # an hour: a step that waited for this model would never finish within the test's time-out
    slow = SlowLlm("### Findings\n\nSlow prose [ev-0000000000].", delay=3600.0)
    result = synthesize(plan("rapid"), SOURCES, provider=slow, llm_budget_seconds=0.6).to_dict()
    extractive = synthesize(plan("rapid"), SOURCES).to_dict()
    assert result["writer"] == "extractive"
    assert result["synthesis_text"] == extractive["synthesis_text"]
    assert any("budget" in note for note in result["notes"]), result["notes"]


def test_the_synthesis_stages_emit_their_own_trace_events() -> None:
    trace = TraceRecorder("job-test")
    result = asyncio.run(synthesize_async(plan("rapid"), SOURCES, trace=trace))
    assert [(e.agent, e.name) for e in trace.events] == [
        (WRITER, "draft_written"),
        (VERIFIER, "verification_completed"),
        (RED_TEAM, "redteam_completed"),
    ]
    written, verified, challenged = (event.payload for event in trace.events)
    assert written["writer"] == result.writer and written["claims"] == len(result.claims)
    assert set(result.primary_themes) <= set(written["themes"])
    assert verified["verdicts"] == {claim.claim_id: claim.verdict for claim in result.claims}
    assert verified["removed"] == [claim.claim_id for claim in result.claims if not claim.kept]
    assert challenged == {
        "flags": result.red_team["flags"],
        "force_refusal": result.red_team["force_refusal"],
    }


def test_the_job_stage_list_is_data_every_driver_can_run() -> None:
    assert set(JOB_SYNTHESIS_STAGES) <= set(JOB_STAGES)
    assert JOB_SYNTHESIS_STAGES == (WRITE, VERIFY, RED_TEAM_STAGE, DECIDE, RENDER)


def test_the_report_is_titled_by_the_goal_and_opens_with_what_the_evidence_shows() -> None:
    goal_plan = plan("rapid")
    result = synthesize(goal_plan, SOURCES)
    title, _, paragraph = result.executive_summary.partition("\n\n")
    assert title == f"## {goal_plan.goal}"  # the goal as asked, not a join of its concepts
    assert "\n" not in paragraph.strip()  # one paragraph
    assert paragraph.startswith("Across 3 analysed source(s) published 2025-2025, ")
    assert "they speak to long documents; no verified finding names transformer architectures." in paragraph
    assert "Smith and Doe (2025) report that block sparse attention" in paragraph
    assert all(name in ("Long documents", OTHER_FINDINGS) for name in result.primary_themes)
