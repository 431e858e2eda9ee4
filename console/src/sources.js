// An answer's and a job's quotes (for the citations panel), sources (for the source list) and reference
// markers ([3] of an answer, [ev-…] of a job) resolved to the source list's entries.

import { discoveredLabel, whereLabel } from "./render.js";

const yearOf = (published) => (published ? Number(String(published).slice(0, 4)) || null : null);
const citationNumber = (citation) => citation.number ?? Number(String(citation.citation_id || "").replace(/\D/g, ""));

// An answer's citations as quotes: grouped by source and origin (the abstract, or one PDF page).
export function answerQuotes(citations) {
  const seen = new Map();
  for (const c of citations) {
    if (seen.has(c.chunk_id)) continue;
    seen.set(c.chunk_id, {
      id: c.chunk_id,
      title: c.title,
      url: c.url,
      text: c.snippet,
      where: `${whereLabel(c.page, c.origin)}, characters ${c.chunk_start}–${c.chunk_end}`,
      start: c.chunk_start,
      end: c.chunk_end,
      group: `${c.source_id}|${c.origin}|${c.page ?? ""}`,
    });
  }
  return [...seen.values()];
}

// A job's evidence as quotes: grouped by source and page.
export function jobQuotes(results) {
  const sources = new Map((results.sources || []).map((s) => [s.source_id, s]));
  return (results.evidence || []).map((e) => {
    const source = sources.get(e.source_id) || {};
    return {
      id: e.evidence_id,
      title: source.title,
      url: source.url,
      text: e.quote,
      where: [whereLabel(e.page, null), e.section ? `section ${e.section}` : null].filter(Boolean).join(", "),
      start: e.char_start ?? 0,
      end: e.char_end ?? 0,
      group: `${e.source_id}|${e.page ?? ""}`,
    };
  });
}

// The answer's cited sources in the order first cited, each with its quotes' numbers and pages; `final.sources`
// (authors, year, venue) completes what a citation carries.
export function answerSources(final) {
  const known = new Map((final.sources || []).map((s) => [s.source_id, s]));
  const bySource = new Map();
  const numbers = new Map();
  for (const c of final.citations || []) {
    let source = bySource.get(c.source_id);
    if (!source) {
      const meta = known.get(c.source_id) || {};
      source = {
        id: c.source_id,
        anchor: `ask-source-${bySource.size + 1}`,
        title: c.title,
        url: c.url,
        authors: meta.authors,
        year: yearOf(meta.published_at ?? c.published_at),
        venue: meta.venue,
        quoted: [],
      };
      bySource.set(c.source_id, source);
    }
    const number = citationNumber(c);
    source.quoted.push(`[${number}] ${whereLabel(c.page, c.origin)}`);
    numbers.set(String(number), { label: String(number), target: source.anchor, title: source.title });
  }
  return { sources: [...bySource.values()], resolve: (token) => numbers.get(token) || null };
}

// A job's cited sources (all of them when none is marked cited), each with the pages of its quotes and,
// for one citation chasing found, its seed; a marker [ev-…] or [n] resolves to its source, shown as that source's number in the list.
export function jobSources(results) {
  const all = results.sources || [];
  const cited = all.some((s) => s.cited) ? all.filter((s) => s.cited) : all;
  const evidence = results.evidence || [];
  const titles = new Map(all.map((s) => [s.source_id, s.title]));
  const sources = cited.map((s, index) => {
    const pages = [...new Set(evidence.filter((e) => e.source_id === s.source_id).map((e) => whereLabel(e.page, e.section ? `section ${e.section}` : "")))];
    return {
      id: s.source_id,
      anchor: `job-source-${index + 1}`,
      title: s.title,
      url: s.url,
      authors: s.authors,
      year: s.year,
      venue: s.venue,
      quoted: pages.filter(Boolean),
      via: discoveredLabel(s.discovered_via, (id) => titles.get(id)),
    };
  });
  const markers = new Map(sources.map((s, index) => [String(index + 1), { label: String(index + 1), target: s.anchor, title: s.title }]));
  for (const e of evidence) {
    const index = sources.findIndex((s) => s.id === e.source_id);
    if (index >= 0) markers.set(e.evidence_id, markers.get(String(index + 1)));
  }
  return { sources, resolve: (token) => markers.get(token) || null };
}
