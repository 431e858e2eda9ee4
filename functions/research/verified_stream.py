"""What a streamed answer shows: only sentences the Verifier kept, each as soon as it is verified.

The writer's draft is never streamed. The model's text is read as it comes; each sentence is verified the
moment the next one begins (the last at the end), and a kept sentence goes out at once, numbered and laid
out exactly as the final answer renders it (`writer.render`), so the stream still starts early and the
deltas of an answer that is not refused add up to its text. An unsupported sentence (a claim the evidence
does not state, or text addressed to the reader or a model) is never sent.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from functions.research.verifier import ClaimVerification, Verifier
from functions.research.writer import (
    NO_ANSWER,
    CitationNumbers,
    Delta,
    DraftSentence,
    attributed_by,
    parse_cited,
)


class VerifiedStream:
    def __init__(
        self,
        verifier: Verifier,
        evidence: dict[str, str],
        on_delta: Delta | None = None,
        attributions: Sequence[str] = (),
    ) -> None:
        self._verifier = verifier
        self._attributions = attributions  # the writer's attributions ("Lee et al. (2023)"): not claims
        self._evidence = evidence
        self._on_delta = on_delta
        self._model_text = ""
        self._numbers = CitationNumbers()
        self._shown = 0
        self._section: str | None = None
        self.sentences: list[DraftSentence] = []
        self.verifications: list[ClaimVerification] = []

    async def feed_model_text(self, delta: str) -> None:
        """The model's next tokens: every sentence now followed by another is complete and verified."""
        self._model_text += delta
        if self._model_text.lstrip().startswith(NO_ANSWER[: len(self._model_text.lstrip())]):
            return  # (the start of) the model's "no answer": nothing to show
        complete = [attributed_by(s, self._attributions) for s in parse_cited(self._model_text)[:-1]]
        for sentence in complete[len(self.verifications) :]:
            self.sentences.append(sentence)
            self.verifications.append(await self._verify(sentence, len(self.verifications) + 1))

    async def finish(self, sentences: Sequence[DraftSentence]) -> list[ClaimVerification]:
        """The whole draft: one verification per sentence, in order. Sentences verified while the model
        wrote keep their verdict; the rest are verified now (and shown if kept). Should the final parse
        differ from what was read on the way, the draft wins, and nothing unverified was shown either way."""
        verifications: list[ClaimVerification] = []
        for index, sentence in enumerate(sentences):
            if index < len(self.sentences) and self.sentences[index] == sentence:
                verifications.append(self.verifications[index])
            else:
                show = index >= len(self.sentences)
                verifications.append(await self._verify(sentence, index + 1, show=show))
        self.sentences = list(sentences)
        self.verifications = verifications
        return verifications

    async def _verify(
        self, sentence: DraftSentence, claim_number: int, *, show: bool = True
    ) -> ClaimVerification:
        [verification] = await self._verifier.verify(
            [(sentence.claim, sentence.chunk_ids)], self._evidence, first_id=claim_number
        )
        verification = replace(verification, claim_text=sentence.text)  # the claim as it is shown
        if show and verification.kept and self._on_delta is not None:
            await self._on_delta(self._layout(sentence))
        return verification

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
