"""What a streamed answer shows: only sentences the Verifier kept, from the moment the gate admits the answer.

The writer's draft is never streamed. Each sentence is verified as soon as it is complete: with an LLM,
the moment the model begins the next one; without, when the extractive writer hands over its draft
(written in milliseconds, the direct answer first). A kept sentence is held until the decision gate,
asked about the sentences verified so far (`admits`), would answer rather than refuse; from then on the
answer is admitted, the held sentences go out and every later kept sentence goes out as soon as it is
verified, numbered and laid out exactly as the final answer renders it (`writer.render`). So nothing is
streamed that is later refused, and the deltas of an answer add up to its text. An unsupported sentence
(a claim the evidence does not state, or text addressed to the reader or a model) is never sent.

Stages after the stream (critique, Red-Team) cannot take back what was sent: once admitted, an answer is
not refused; they annotate it (flags, notes) and may lower its confidence, and `final` carries the
authoritative answer, verdicts and confidence (functions/research/pipeline.py).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import replace

from functions.research.checking.verifier import ClaimVerification, Verifier
from functions.research.writing.writer import (
    NO_ANSWER,
    CitationNumbers,
    Delta,
    DraftSentence,
    attributed_by,
    parse_cited,
)

# The gate, asked about the verifications so far: may the answer be sent?
Admission = Callable[[Sequence[ClaimVerification]], Awaitable[bool]]


async def _always(verifications: Sequence[ClaimVerification]) -> bool:
    return True


class VerifiedStream:
    def __init__(
        self,
        verifier: Verifier,
        evidence: dict[str, str],
        on_delta: Delta | None = None,
        admits: Admission = _always,
        attributions: Sequence[str] = (),
    ) -> None:
        self._verifier = verifier
        # The writer's attributions ("Lee et al. (2023)"): not claims. Set again once the sources are known.
        self.attributions = attributions
        self._evidence = evidence
        self._on_delta = on_delta
        self._admits = admits
        self._model_text = ""
        self._numbers = CitationNumbers()
        self._shown = 0
        self._section: str | None = None
        self._held: list[DraftSentence] = []  # kept, not yet sent: the answer is not admitted yet
        self.admitted = False
        self.sentences: list[DraftSentence] = []
        self.verifications: list[ClaimVerification] = []

    async def feed_model_text(self, delta: str) -> None:
        """The model's next tokens: every sentence now followed by another is complete and verified."""
        self._model_text += delta
        if self._model_text.lstrip().startswith(NO_ANSWER[: len(self._model_text.lstrip())]):
            return  # (the start of) the model's "no answer": nothing to show
        complete = [attributed_by(s, self.attributions) for s in parse_cited(self._model_text)[:-1]]
        await self.add(complete[len(self.verifications) :])

    async def add(self, sentences: Sequence[DraftSentence]) -> None:
        """The next complete sentences of the answer, each verified and, once admitted, sent."""
        for sentence in sentences:
            self.sentences.append(sentence)
            self.verifications.append(await self._verify(sentence, len(self.verifications) + 1))
            await self._release()

    def withdraw(self) -> None:
        """Forgets what was verified and held: only while nothing was sent (the answer not admitted)."""
        if self.admitted:
            raise RuntimeError("an admitted answer cannot be withdrawn: it was sent")
        self._held, self.sentences, self.verifications = [], [], []

    async def finish(self, sentences: Sequence[DraftSentence]) -> list[ClaimVerification]:
        """The whole draft: one verification per sentence, in order. Sentences verified while the model
        wrote keep their verdict; the rest are verified now, then the gate is asked once more about them
        all. Should the final parse differ from what was read on the way, the draft wins, and nothing
        unverified was shown either way."""
        verifications: list[ClaimVerification] = []
        for index, sentence in enumerate(sentences):
            if index < len(self.sentences) and self.sentences[index] == sentence:
                verifications.append(self.verifications[index])
            else:
                show = index >= len(self.sentences)
                verifications.append(await self._verify(sentence, index + 1, show=show))
        self.sentences = list(sentences)
        self.verifications = verifications
        await self._release()
        return verifications

    async def _verify(
        self, sentence: DraftSentence, claim_number: int, *, show: bool = True
    ) -> ClaimVerification:
        [verification] = await self._verifier.verify(
            [(sentence.claim, sentence.chunk_ids)], self._evidence, first_id=claim_number
        )
        verification = replace(verification, claim_text=sentence.text)  # the claim as it is shown
        if show and verification.kept:
            self._held.append(sentence)
        return verification

    async def _release(self) -> None:
        """Sends the held sentences once the gate admits the answer (it is asked until it does)."""
        if not self._held:
            return
        if not self.admitted:
            self.admitted = await self._admits(self.verifications)
            if not self.admitted:
                return
        held, self._held = self._held, []
        if self._on_delta is not None:
            for sentence in held:
                await self._on_delta(self._layout(sentence))

    def _layout(self, sentence: DraftSentence) -> str:
        """The sentence as `render` places it after the kept sentences before it."""
        prefix = " " if self._shown else ""
        if sentence.section != self._section:
            self._section = sentence.section
            prefix = "\n\n" if self._shown else ""
            if sentence.section:
                prefix += f"### {sentence.section}\n\n"
        self._shown += 1
        return prefix + f"{sentence.text} {self._numbers.mark(sentence.chunk_ids)}".strip()
