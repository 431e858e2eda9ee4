"""The answer engine's presets, focus modes and reasoning effort: what each changes in the pipeline.

Presets choose the stages and the style (the multi-source contract's five); the research job's Synthesize
step runs its own slice of the same stages (JOB_SYNTHESIS_STAGES). Focus modes steer what is
searched and which evidence ranks first (its seven). Reasoning effort sets how much is read. Verification
is never switched off: every sentence of every preset is checked against the evidence it cites, because
checking costs milliseconds and an unchecked claim is what this API exists to avoid.
"""

from __future__ import annotations

from dataclasses import dataclass

EFFORT_LOW, EFFORT_MEDIUM, EFFORT_HIGH = "low", "medium", "high"
REASONING_EFFORTS = (EFFORT_LOW, EFFORT_MEDIUM, EFFORT_HIGH)

STYLE_ANSWER, STYLE_ACADEMIC, STYLE_TUTORIAL, STYLE_CONTRADICTIONS = (
    "answer",
    "academic",
    "tutorial",
    "contradictions",
)
STYLE_REPORT = "report"  # the research job's synthesis: themes, then gaps

# The pipeline's stages (functions/research/stages.py); each driver maps a name to its stage.
PLAN, RANK, LEAD, READ, WRITE, CRITIQUE, VERIFY, RED_TEAM, DECIDE, FINALIZE, RENDER = (
    "plan",
    "rank",
    "lead",
    "read",
    "write",
    "critique",
    "verify",
    "red_team",
    "decide",
    "finalize",
    "render",
)
# RANK ranks the sources and starts reading the full text of the top ones; LEAD runs while it is read
# (without an LLM it writes, verifies and, once the gate admits it, sends the direct answer from the
# abstracts); READ awaits the full text. Verification right after writing: the answer streams from there
# (functions/research/verified_stream.py), and the critique and Red-Team that follow annotate what was
# sent rather than delay it.
FULL_STAGES = (PLAN, RANK, LEAD, READ, WRITE, VERIFY, CRITIQUE, RED_TEAM, DECIDE, FINALIZE)
UNCRITICAL_STAGES = tuple(stage for stage in FULL_STAGES if stage != CRITIQUE)
# The research job's Synthesize step: planning, search, screening and extraction are steps of its own.
JOB_SYNTHESIS_STAGES = (WRITE, VERIFY, RED_TEAM, DECIDE, RENDER)


@dataclass(frozen=True)
class Effort:
    name: str
    queries: int  # searches planned (the whole question first, then its concepts)
    sources: int  # fused sources kept after relevance ranking
    chunks: int  # evidence chunks the writer may use
    full_text_papers: int  # top sources read in full (PDF through the extraction service), when allowed
    # Sources scored with the MiniLM embedder as well as lexically (the ones with most term overlap);
    # embedding costs 40-80 ms a source on one core, the rest get the calibrated lexical model.
    embedded_sources: int


EFFORTS: dict[str, Effort] = {
    EFFORT_LOW: Effort(EFFORT_LOW, queries=2, sources=6, chunks=8, full_text_papers=0, embedded_sources=6),
    EFFORT_MEDIUM: Effort(
        EFFORT_MEDIUM, queries=3, sources=8, chunks=12, full_text_papers=2, embedded_sources=16
    ),
    EFFORT_HIGH: Effort(
        EFFORT_HIGH, queries=5, sources=12, chunks=18, full_text_papers=4, embedded_sources=24
    ),
}


@dataclass(frozen=True)
class Preset:
    name: str
    display_name: str
    description: str
    features: tuple[str, ...]
    style: str
    # The defaults are the full pipeline. full_text: may read the top sources in full (how many: the
    # reasoning effort); stages in order (CRITIQUE: coverage, single-source and contradiction critique);
    # rcs: per-source relevance-scored summaries; quality_gate: refuse below the confidence threshold
    # (otherwise only when nothing is verified).
    full_text: bool = True
    stages: tuple[str, ...] = FULL_STAGES
    rcs: bool = True
    quality_gate: bool = True
    source_bonus: int = 0  # extra sources kept (contradiction hunting needs more voices)
    max_effort: str | None = None  # a preset defined by its speed reads no more than this

    @property
    def critic(self) -> bool:
        return CRITIQUE in self.stages


PRESETS: dict[str, Preset] = {
    preset.name: preset
    for preset in (
        Preset(
            "fast",
            "Fast",
            "Quick answer from abstracts: one round of searches, no full text, no critique",
            ("basic_synthesis", "verification"),
            style=STYLE_ANSWER,
            full_text=False,
            stages=UNCRITICAL_STAGES,
            rcs=False,
            quality_gate=False,
            max_effort=EFFORT_LOW,
        ),
        Preset(
            "comprehensive",
            "Comprehensive",
            "Full pipeline with quality gate, RCS, and contradiction detection",
            ("quality_gate", "rcs", "contradictions", "outline", "full_text", "verification"),
            style=STYLE_ACADEMIC,
        ),
        Preset(
            "contracrow",
            "ContraCrow",
            "Focus on contradiction detection: more sources, the answer sets disagreeing findings side by side",
            ("quality_gate", "rcs", "contradictions", "full_text", "verification"),
            style=STYLE_CONTRADICTIONS,
            source_bonus=4,
        ),
        Preset(
            "academic",
            "Academic",
            "Academic style with outline: background, findings, limitations",
            ("quality_gate", "rcs", "outline", "academic_style", "full_text", "verification"),
            style=STYLE_ACADEMIC,
        ),
        Preset(
            "tutorial",
            "Tutorial",
            "Tutorial style with outline: what it is, how it works, what to watch for",
            ("quality_gate", "outline", "tutorial_style", "verification"),
            style=STYLE_TUTORIAL,
            rcs=False,
        ),
    )
}
# No preset: the full pipeline in plain answer style.
DEFAULT_PRESET = Preset(
    "default",
    "Default",
    "Answer with critique, quality gate and per-source summaries",
    ("quality_gate", "rcs", "contradictions", "verification"),
    style=STYLE_ANSWER,
)


def preset_named(name: str | None) -> Preset:
    return PRESETS[name] if name else DEFAULT_PRESET


@dataclass(frozen=True)
class FocusMode:
    name: str
    description: str
    # Sentence cues that rank evidence higher (lower-case substrings).
    chunk_cues: tuple[str, ...] = ()
    recent_years: int | None = None  # only sources from the last N years
    prefer_peer_reviewed: bool = False  # rank sources with a venue, a DOI and citations first
    split_alternatives: bool = False  # search each compared item on its own, balance the evidence


_DEFINITIONAL = ("is a ", "is an ", "refers to", "is defined", "consists of", "we propose", "we introduce")

FOCUS_MODES: dict[str, FocusMode] = {
    mode.name: mode
    for mode in (
        FocusMode("general", "Balanced search across all sources"),
        FocusMode(
            "academic",
            "Prioritize scholarly and research sources: peer-reviewed venues and cited work rank first",
            prefer_peer_reviewed=True,
        ),
        FocusMode(
            "documentation",
            "Focus on definitions and method descriptions: how a technique is specified",
            chunk_cues=(*_DEFINITIONAL, "method", "algorithm", "implementation", "architecture"),
        ),
        FocusMode(
            "comparison",
            "Compare alternatives: each compared item is searched on its own and evidence is balanced",
            chunk_cues=("compared", "than", "outperform", "versus", "whereas", "baseline"),
            split_alternatives=True,
        ),
        FocusMode(
            "debugging",
            "Failure modes and limitations: what goes wrong and why",
            chunk_cues=("fail", "error", "limitation", "does not", "unstable", "degrad", "problem", "issue"),
        ),
        FocusMode(
            "tutorial",
            "Step-by-step understanding: definitions first, then how it works",
            chunk_cues=(*_DEFINITIONAL, "first", "step", "example", "works by"),
        ),
        FocusMode(
            "news",
            "Recent work: sources from the last two years, newest first",
            recent_years=2,
        ),
    )
}
DEFAULT_FOCUS = FOCUS_MODES["general"]
