"""The Verifier judges the sentence shown: an attributed rewrite is supported only when it keeps the quote's
numbers and units, polarity, hedges and population; confidence comes from agreement across sources."""

from __future__ import annotations

import asyncio

import pytest

from functions.research.checking.verifier import SUPPORTED, UNSUPPORTED, Verifier, agreement, verify_claim

TRIAL = (
    "We randomised 38 patients with chronic migraine and found that 25 mg of the drug reduced monthly "
    "headache days by 40% over 12 weeks [8, 9, 14]."
)
HEDGED = "Our results suggest that sparse attention may reduce the memory use of long-document transformers."
NEGATIVE = "In mice, the compound did not lower blood glucose compared with placebo (Smith et al., 2019)."
ABBREVIATED = "The BCR was higher in affected limbs than in healthy controls."


@pytest.mark.parametrize(
    ("shown", "quote"),
    [
        (
            "In 38 patients with chronic migraine, Lee et al. (2023) found that 25 mg of the drug reduced "
            "monthly headache days by 40% over 12 weeks.",
            TRIAL,
        ),
        (
            "Chen and Park (2021) report that sparse attention may reduce the memory use of long-document "
            "transformers.",
            HEDGED,
        ),
        (
            "In mice, the compound did not lower blood glucose compared with placebo, Wu et al. (2019) found.",
            NEGATIVE,
        ),
        (
            "Kim et al. (2020) found the bilateral contrast ratio (BCR) was higher in affected limbs than in "
            "healthy controls.",
            ABBREVIATED,
        ),
    ],
)
def test_a_faithful_attributed_rewrite_is_supported(shown: str, quote: str) -> None:
    verdict, _, why = verify_claim(shown, [quote])
    assert verdict == SUPPORTED, why


@pytest.mark.parametrize(
    ("shown", "quote", "reason"),
    [
        (  # a changed number
            "In 38 patients, Lee et al. (2023) found that 25 mg of the drug reduced monthly headache days by "
            "60% over 12 weeks.",
            TRIAL,
            "numbers not in the cited evidence",
        ),
        (  # a dropped number
            "In 38 patients, Lee et al. (2023) found that 25 mg of the drug reduced monthly headache days.",
            TRIAL,
            "drops the quote's numbers",
        ),
        (  # a changed unit
            "In 38 patients, Lee et al. (2023) found that 25 g of the drug reduced monthly headache days by "
            "40% over 12 weeks.",
            TRIAL,
            "changes a unit",
        ),
        (  # a flipped negation
            "In mice, Wu et al. (2019) found the compound lowered blood glucose compared with placebo.",
            NEGATIVE,
            "drops the quote's negation",
        ),
        (  # a negation added
            "Chen and Park (2021) report that sparse attention may not reduce the memory use of long-document "
            "transformers.",
            HEDGED,
            "negates",
        ),
        (  # a reversed direction
            "In 38 patients, Lee et al. (2023) found that 25 mg of the drug increased monthly headache days by "
            "40% over 12 weeks.",
            TRIAL,
            "reverses the direction",
        ),
        (  # a hedge turned into certainty
            "Chen and Park (2021) showed that sparse attention reduces the memory use of long-document "
            "transformers.",
            HEDGED,
            "states as certain",
        ),
        (  # a different population
            "In patients, Wu et al. (2019) found the compound did not lower blood glucose compared with placebo.",
            NEGATIVE,
            "population",
        ),
        (  # a dropped population
            "Wu et al. (2019) found the compound did not lower blood glucose compared with placebo.",
            NEGATIVE,
            "drops the population studied",
        ),
    ],
)
def test_an_unfaithful_rewrite_is_not_supported(shown: str, quote: str, reason: str) -> None:
    verdict, _, why = verify_claim(shown, [quote])
    assert verdict == UNSUPPORTED
    assert reason in why


def test_the_papers_own_reference_markers_are_neither_needed_nor_counted_as_numbers() -> None:
    shown = (
        "Lee et al. (2023) randomised 38 patients with chronic migraine and found that 25 mg of the drug "
        "reduced monthly headache days by 40% over 12 weeks."
    )
    assert verify_claim(shown, [TRIAL])[0] == SUPPORTED
    # a number from a reference marker is still a number the quote does not state as a finding
    assert verify_claim(shown.replace("12 weeks", "14 weeks"), [TRIAL])[0] == UNSUPPORTED


def _verify(verifier: Verifier, claim: str, cited: list[str], evidence: dict[str, str]) -> float:
    [verification] = asyncio.run(verifier.verify([(claim, cited)], evidence))
    assert verification.verdict == SUPPORTED, verification.notes
    return verification.confidence


def test_a_lone_source_is_not_certain_and_agreeing_sources_raise_confidence() -> None:
    quote = "Exercise training improved sleep quality in older adults with insomnia over twelve weeks."
    agreeing = "Over twelve weeks, exercise training improved sleep quality in older adults with insomnia."
    unrelated = "Caffeine intake late in the day shortened total sleep time in students."
    claim = "Reid et al. (2010) found exercise training improved sleep quality in older adults with insomnia."
    evidence = {"chunk-a": quote, "chunk-b": quote + " Participants slept longer.", "chunk-c": unrelated}
    alone = _verify(
        Verifier(None, {"chunk-a": "s1", "chunk-b": "s1", "chunk-c": "s2"}), claim, ["chunk-a"], evidence
    )
    assert alone == pytest.approx(agreement(1)) and alone <= 0.5  # a quote supporting itself is one source
    evidence["chunk-d"] = agreeing
    corroborated = _verify(
        Verifier(None, {"chunk-a": "s1", "chunk-b": "s1", "chunk-c": "s2", "chunk-d": "s3"}),
        claim,
        ["chunk-a"],
        evidence,
    )
    assert corroborated == pytest.approx(agreement(2)) and corroborated > alone
    contrary = (
        "Exercise training did not improve sleep quality in older adults with insomnia over twelve weeks."
    )
    evidence["chunk-d"] = contrary
    disputed = _verify(
        Verifier(None, {"chunk-a": "s1", "chunk-b": "s1", "chunk-c": "s2", "chunk-d": "s3"}),
        claim,
        ["chunk-a"],
        evidence,
    )
    assert disputed == alone  # a source that negates the finding does not agree with it
