"""Living reviews: what changed between two runs of one schedule, computed from their results.

`changes_since_last_run(current, previous, ...)` compares two results documents (the `results.json`
Finalize writes) and names, in bounded lists:

- `new_sources`: sources selected now that the previous run did not select;
- `sources_no_longer_found`: sources the previous run selected that this run did not even discover;
- `sources_no_longer_selected`: sources the previous run selected that this run discovered but screened
  out (ranked below newer sources, or now failing a policy);
- `newly_retracted_sources`: sources selected now and flagged retracted (`is_retracted`) that were not
  flagged in the previous run (a new source that is already retracted counts too);
- `claims_with_changed_verdict`: claims (matched on their normalised text) whose verifier verdict, or
  whether they were kept, changed;
- `new_themes` and `vanished_themes`: the synthesis' primary themes, compared by normalised name;
- `new_citing_works`: works that cite one of this run's included sources (the providers' citation graphs)
  and that the previous run's look-up did not return (`citing_works_seen` keeps each run's, by DOI or
  normalised title); the cheapest way to notice new work on the topic.

Sources are matched on any shared identifier (DOI, URL or normalised title), so a paper that one run
knew by its arXiv URL and the next by its DOI as well is the same source. Status that is not a change
is reported too: `retracted_sources` lists every selected source flagged retracted in this run, first
run included, and `claims_citing_retracted_sources` the kept claims with evidence from one.

The first run of a schedule has nothing to compare with: `first_run` is true, `previous_job_id` null,
every change list empty and every change count zero (the run is the baseline of the next one).

Pure functions over plain JSON: no I/O. Lists hold at most `limit` entries (`truncated` names the
lists that were cut; `counts` always has the full numbers), so a digest fits an EventBridge event.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

MAX_LISTED = 25
_TITLE_CHARS = 300
_CLAIM_CHARS = 500
CHANGE_LISTS = (
    "new_sources",
    "sources_no_longer_found",
    "sources_no_longer_selected",
    "newly_retracted_sources",
    "claims_with_changed_verdict",
    "new_themes",
    "vanished_themes",
    "new_citing_works",
)
STATUS_LISTS = ("retracted_sources", "claims_citing_retracted_sources")


def normalise_text(value: str) -> str:
    """Case-, accent- and punctuation-insensitive form of a title, theme or claim."""
    folded = unicodedata.normalize("NFKD", value).encode("ascii", "ignore").decode("ascii").lower()
    return " ".join(re.findall(r"[a-z0-9]+", folded))


def source_keys(source: Mapping[str, Any]) -> set[str]:
    """Every identifier a source is known by: `doi:`, `url:` and (long enough) `title:` keys."""
    keys: set[str] = set()
    doi = str(source.get("doi") or "").strip().lower()
    if doi:
        keys.add(f"doi:{doi}")
    url = str(source.get("url") or "").strip()
    if url:
        keys.add(f"url:{url.rstrip('/').lower()}")
    title = normalise_text(str(source.get("title") or ""))
    if len(title) >= 20:  # short titles ("Introduction") are not identities
        keys.add(f"title:{title}")
    return keys


class _SourceIndex:
    def __init__(self, sources: Iterable[Mapping[str, Any]]) -> None:
        self._by_key: dict[str, Mapping[str, Any]] = {}
        for source in sources:
            for key in source_keys(source):
                self._by_key.setdefault(key, source)

    def find(self, source: Mapping[str, Any]) -> Mapping[str, Any] | None:
        for key in sorted(source_keys(source)):  # doi before title before url: deterministic
            if key in self._by_key:
                return self._by_key[key]
        return None


def _source_entry(source: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "source_id": source.get("source_id"),
        "title": str(source.get("title") or "")[:_TITLE_CHARS],
        "doi": source.get("doi"),
        "url": source.get("url"),
        "year": source.get("year"),
    }


def _sources(results: Mapping[str, Any] | None) -> list[Mapping[str, Any]]:
    return [s for s in (results or {}).get("sources") or [] if isinstance(s, Mapping)]


def _themes(results: Mapping[str, Any] | None) -> list[str]:
    synthesis = (results or {}).get("synthesis") or {}
    return [str(theme) for theme in synthesis.get("primary_themes") or [] if str(theme).strip()]


def _claims(results: Mapping[str, Any] | None) -> dict[str, Mapping[str, Any]]:
    claims: dict[str, Mapping[str, Any]] = {}
    for claim in (results or {}).get("claims") or []:
        if isinstance(claim, Mapping) and claim.get("claim_text"):
            claims.setdefault(normalise_text(str(claim["claim_text"])), claim)
    return claims


def _failed_connectors(results: Mapping[str, Any] | None) -> list[str]:
    summary = (results or {}).get("execution_summary") or {}
    return [str(name) for name in summary.get("failed_connectors") or []]


def _retracted(source: Mapping[str, Any]) -> bool:
    return source.get("is_retracted") is True


def _claims_citing(results: Mapping[str, Any], retracted_ids: set[str]) -> list[dict[str, Any]]:
    evidence_source = {
        str(item.get("evidence_id")): str(item.get("source_id"))
        for item in results.get("evidence") or []
        if isinstance(item, Mapping)
    }
    found: list[dict[str, Any]] = []
    for claim in results.get("claims") or []:
        if not isinstance(claim, Mapping) or not claim.get("kept"):
            continue
        cited = sorted(
            {evidence_source.get(str(e), "") for e in claim.get("evidence_ids") or []} & retracted_ids
        )
        if cited:
            found.append(
                {
                    "claim_text": str(claim.get("claim_text") or "")[:_CLAIM_CHARS],
                    "retracted_source_ids": cited,
                }
            )
    return found


def _bounded(lists: dict[str, list[Any]], limit: int) -> tuple[dict[str, list[Any]], list[str]]:
    truncated = sorted(name for name, items in lists.items() if len(items) > limit)
    return {name: items[:limit] for name, items in lists.items()}, truncated


def changes_since_last_run(
    current: Mapping[str, Any],
    previous: Mapping[str, Any] | None,
    *,
    previous_job_id: str | None,
    previous_finished_at: str | None = None,
    discovered: Sequence[Mapping[str, Any]] = (),
    retraction_check: Mapping[str, Any] | None = None,
    citing_works: Sequence[Mapping[str, Any]] = (),
    limit: int = MAX_LISTED,
) -> dict[str, Any]:
    """The digest of a scheduled run (see the module docstring).

    `current`/`previous`: results documents (`sources` with `is_retracted`, `claims`, `evidence`,
    `synthesis.primary_themes`, `execution_summary.failed_connectors`); `previous` None on a first run.
    `discovered`: every source this run discovered (selected or not; title/doi/url), to tell a source
    that is gone from one that was screened out. `retraction_check`: how the retraction flags were
    obtained (counts and errors), reported as is. `citing_works`: the works citing this run's included
    sources (`title`, `doi`, `url`, `year`, `cites`: the source's id).
    """
    sources = _sources(current)
    retracted_now = [s for s in sources if _retracted(s)]
    status_lists = {
        "retracted_sources": [_source_entry(s) for s in retracted_now],
        "claims_citing_retracted_sources": _claims_citing(
            current, {str(s.get("source_id")) for s in retracted_now}
        ),
    }
    change_lists: dict[str, list[Any]] = {name: [] for name in CHANGE_LISTS}
    caveats: list[str] = []
    first_run = previous is None
    seen_now = list(dict.fromkeys(_work_key(work) for work in citing_works))
    if previous is not None:
        change_lists = _change_lists(current, previous, discovered)
        change_lists["new_citing_works"] = _new_citing_works(previous, citing_works, caveats)
        for label, results in (("this run", current), ("the previous run", previous)):
            failed = _failed_connectors(results)
            if failed:
                caveats.append(
                    f"{', '.join(failed)} failed in {label}: sources only "
                    f"{'it' if len(failed) == 1 else 'they'} found may show as new or no longer found"
                )
    check = dict(retraction_check or {})
    if check.get("error"):
        caveats.append(f"retraction lookup incomplete: {check['error']}")
    counts = {name: len(items) for name, items in {**change_lists, **status_lists}.items()}
    lists, truncated = _bounded({**change_lists, **status_lists}, limit)
    return {
        "previous_job_id": None if first_run else previous_job_id,
        "previous_finished_at": None if first_run else previous_finished_at,
        "first_run": first_run,
        "summary": _summary(first_run, counts, len(sources)),
        "counts": counts,
        **lists,
        "truncated": truncated,
        "retraction_check": check,
        "caveats": caveats,
        "citing_works_seen": seen_now,
    }


def _new_citing_works(
    previous: Mapping[str, Any], citing_works: Sequence[Mapping[str, Any]], caveats: list[str]
) -> list[Any]:
    """The citing works the previous run had not seen, once each in this run's order; a caveat when the
    previous run looked none up (this run's are then the baseline)."""
    seen_before = (previous.get("changes_since_last_run") or {}).get("citing_works_seen")
    if not isinstance(seen_before, list):
        if citing_works:
            caveats.append("the previous run looked up no citing works: this run's are the baseline")
        return []
    known = set(seen_before)
    unseen = {_work_key(w): w for w in reversed(citing_works) if _work_key(w) not in known}
    return list(reversed(unseen.values()))  # once each, first kept


def _work_key(work: Mapping[str, Any]) -> str:
    doi = str(work.get("doi") or "").lower()
    return f"doi:{doi}" if doi else f"title:{normalise_text(str(work.get('title') or ''))}"


def _change_lists(
    current: Mapping[str, Any], previous: Mapping[str, Any], discovered: Sequence[Mapping[str, Any]]
) -> dict[str, list[Any]]:
    now, before = _sources(current), _sources(previous)
    now_index, before_index = _SourceIndex(now), _SourceIndex(before)
    discovered_index = _SourceIndex(discovered)
    new_sources = [s for s in now if before_index.find(s) is None]
    gone = [s for s in before if now_index.find(s) is None]
    newly_retracted = []
    for source in now:
        earlier = before_index.find(source)
        if _retracted(source) and (earlier is None or not _retracted(earlier)):
            newly_retracted.append(source)
    claims_now, claims_before = _claims(current), _claims(previous)
    changed_claims = []
    for key, claim in claims_now.items():
        earlier_claim = claims_before.get(key)
        if earlier_claim is None:
            continue
        if (earlier_claim.get("verdict"), bool(earlier_claim.get("kept"))) != (
            claim.get("verdict"),
            bool(claim.get("kept")),
        ):
            changed_claims.append(
                {
                    "claim_text": str(claim.get("claim_text") or "")[:_CLAIM_CHARS],
                    "previous_verdict": earlier_claim.get("verdict"),
                    "verdict": claim.get("verdict"),
                    "previously_kept": bool(earlier_claim.get("kept")),
                    "kept": bool(claim.get("kept")),
                }
            )
    themes_now = {normalise_text(t): t for t in _themes(current)}
    themes_before = {normalise_text(t): t for t in _themes(previous)}
    return {
        "new_sources": [_source_entry(s) for s in new_sources],
        "sources_no_longer_found": [_source_entry(s) for s in gone if discovered_index.find(s) is None],
        "sources_no_longer_selected": [
            _source_entry(s) for s in gone if discovered_index.find(s) is not None
        ],
        "newly_retracted_sources": [_source_entry(s) for s in newly_retracted],
        "claims_with_changed_verdict": changed_claims,
        "new_themes": [theme for key, theme in themes_now.items() if key not in themes_before],
        "vanished_themes": [theme for key, theme in themes_before.items() if key not in themes_now],
    }


def _summary(first_run: bool, counts: Mapping[str, int], sources: int) -> str:
    if first_run:
        text = f"first run: nothing to compare with; its {sources} sources are the baseline of the next run"
        if counts["retracted_sources"]:
            text += f" ({counts['retracted_sources']} flagged retracted)"
        return text
    parts = [
        f"{counts['new_sources']} new sources",
        f"{counts['sources_no_longer_found']} no longer found",
        f"{counts['sources_no_longer_selected']} no longer selected",
        f"{counts['newly_retracted_sources']} newly retracted",
        f"{counts['claims_with_changed_verdict']} claims with a changed verdict",
        f"{counts['new_themes']} new themes",
        f"{counts['vanished_themes']} vanished themes",
        f"{counts['new_citing_works']} new citing works",
    ]
    return ", ".join(parts)


def has_changes(digest: Mapping[str, Any]) -> bool:
    counts = digest.get("counts") or {}
    return any(int(counts.get(name, 0)) for name in CHANGE_LISTS)


def compact(digest: Mapping[str, Any], limit: int = 10) -> dict[str, Any]:
    """The digest with every list cut to `limit` entries (for events with a size limit)."""
    short = dict(digest)
    cut = set(digest.get("truncated") or [])
    for name in (*CHANGE_LISTS, *STATUS_LISTS):
        items = list(digest.get(name) or [])
        if len(items) > limit:
            cut.add(name)
        short[name] = items[:limit]
    short["truncated"] = sorted(cut)
    return short
