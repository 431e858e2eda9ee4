// A job waiting at a human checkpoint (GET /api/agent/checkpoint/{job_id}): its payload as a form whose
// edits become the body of POST …/approve. Every retrieved text (titles, quotes, claims) is shown as text.

import { discoveredLabel, el, renderStructure, whereLabel } from "./render.js";

const SCORES = ["relevance", "citation_impact", "recency", "methodology", "accessibility"];
const PHASE_TITLE = {
  plan: "Plan: databases and search strings",
  screening: "Screening: ranked candidates",
  extraction: "Extraction: quotes of each source",
  synthesis: "Synthesis: draft report and claims",
};

const first = (object, ...names) => names.map((name) => object && object[name]).find((value) => value !== undefined && value !== null);
const sameSet = (a, b) => a.length === b.length && a.every((item) => b.includes(item));
let fieldCount = 0;
const fieldId = (stem) => `checkpoint-${stem}-${(fieldCount += 1)}`;

function checkbox(label, attributes = {}) {
  const id = fieldId("check");
  const input = el("input", { type: "checkbox", id, ...attributes });
  return { input, node: el("span", { className: "check" }, input, el("label", { for: id, text: label })) };
}

function numberField(label, value, min, max) {
  const id = fieldId("number");
  const input = el("input", { type: "number", id, min, max, value: value ?? "" });
  return { input, node: el("div", { className: "field" }, el("label", { for: id, text: label }), input) };
}

// ---- plan: connectors, each connector's queries, the publication window ---------------------------

function queriesByConnector(payload) {
  const queries = first(payload, "queries", "search_queries") || {};
  if (!Array.isArray(queries)) return queries;
  const grouped = {};
  for (const item of queries) (grouped[item.connector] ||= []).push(typeof item === "string" ? item : item.query);
  return grouped;
}

function queryRow(list, connector, text) {
  const id = fieldId("query");
  const input = el("input", { id, value: text, maxlength: 500, "data-connector": connector, className: "query-input" });
  const remove = el("button", { type: "button", className: "secondary", text: "Remove", "aria-label": `Remove query ${text || "(new)"} of ${connector}` });
  const row = el("li", {}, el("label", { for: id, className: "visually-hidden", text: `Query for ${connector}` }), input, remove);
  remove.addEventListener("click", () => row.remove());
  list.append(row);
  return input;
}

function planEditor(payload) {
  const queries = queriesByConnector(payload);
  const chosen = first(payload, "connectors") || Object.keys(queries);
  const names = [...new Set([...(first(payload, "available_connectors") || []), ...chosen, ...Object.keys(queries)])];
  const checks = new Map();
  const groups = names.map((connector) => {
    const box = checkbox(`Query ${connector}`, { checked: chosen.includes(connector), "data-connector": connector });
    checks.set(connector, box.input);
    const list = el("ul", { className: "queries" });
    for (const text of queries[connector] || []) queryRow(list, connector, text);
    const add = el("button", { type: "button", className: "secondary", text: `Add a query for ${connector}` });
    add.addEventListener("click", () => queryRow(list, connector, "").focus());
    return el("fieldset", { className: "connector", "data-connector": connector }, el("legend", { text: connector }), box.node, list, add);
  });
  const window = numberField("Publication window (years)", first(payload, "publication_window_years"), 1, 10);
  const node = el("div", { className: "stack" }, ...groups, window.node);
  const collect = () => {
    const edits = { connectors: names.filter((name) => checks.get(name).checked) };
    edits.queries = {};
    for (const name of edits.connectors) {
      const inputs = node.querySelectorAll(`fieldset[data-connector="${CSS.escape(name)}"] .query-input`);
      edits.queries[name] = [...inputs].map((input) => input.value.trim()).filter(Boolean);
    }
    if (window.input.value !== "") edits.publication_window_years = Number(window.input.value);
    return edits;
  };
  return { node, collect };
}

// ---- screening: candidates with their five scores; exclude, add, how many are extracted --------------

function scoreCell(candidate, name) {
  const value = (first(candidate, "scores") || {})[name];
  return el("td", { text: typeof value === "number" ? value.toFixed(2) : "" });
}

function explanation(candidate) {
  const explained = first(candidate, "explanations", "score_explanations", "explanation");
  if (!explained) return null;
  const text = typeof explained === "string" ? explained : Object.entries(explained).map(([name, why]) => `${name.replace("_", " ")}: ${why}`).join("\n");
  return el("details", {}, el("summary", { text: "Why these scores" }), el("p", { className: "explanation", text }));
}

function standing(candidate) {
  if (candidate.rejection) return `rejected: ${String(candidate.rejection).replaceAll("_", " ")}`;
  return candidate.selected === false ? "not selected" : "selected";
}

function screeningEditor(payload) {
  const candidates = first(payload, "candidates") || [];
  const excluded = [];
  const rows = candidates.map((candidate, index) => {
    const id = String(first(candidate, "id", "candidate_id", "source_id"));
    const box = checkbox("Exclude", { "data-candidate-id": id, "aria-describedby": `checkpoint-candidate-${index}` });
    excluded.push([id, box.input]);
    return el(
      "tr",
      { "data-candidate-id": id },
      el("td", {}, box.node),
      el("td", { id: `checkpoint-candidate-${index}` }, el("span", { text: first(candidate, "title") || id }), explanation(candidate)),
      el("td", { className: "standing", text: standing(candidate) }),
      ...SCORES.map((name) => scoreCell(candidate, name)),
    );
  });
  const heads = ["", "Candidate", "Standing", ...SCORES.map((name) => name.replace("_", " "))];
  const table = el(
    "div",
    { className: "table-wrap" },
    el(
      "table",
      { className: "candidates" },
      el("caption", { className: "visually-hidden", text: "Ranked candidates" }),
      el("thead", {}, el("tr", {}, ...heads.map((h) => el("th", { scope: "col", text: h })))),
      el("tbody", {}, ...rows),
    ),
  );
  const addId = fieldId("add");
  const add = el("textarea", { id: addId, rows: 2, spellcheck: "false", placeholder: "doi:10.1000/xyz\narxiv:2301.00001\nlibrary:doc-…" });
  const original = first(payload, "max_sources");
  const count = numberField("Sources to extract", original, 1, 50);
  const node = el(
    "div",
    { className: "stack" },
    table,
    el("label", { for: addId, text: "Add papers (one per line: doi:…, arxiv:… or library:…)" }),
    add,
    count.node,
  );
  const collect = () => {
    const edits = {
      exclude: excluded.filter(([, input]) => input.checked).map(([id]) => id),
      add: add.value.split(/\s+/).map((item) => item.trim()).filter(Boolean),
    };
    if (count.input.value !== "" && Number(count.input.value) !== Number(original)) edits.max_sources = Number(count.input.value);
    return edits;
  };
  return { node, collect };
}

// ---- extraction: each source's quotes (and the seed of one citation chasing found); strike a quote, flag
// a source as not relevant

function extractionSources(payload) {
  const sources = first(payload, "sources") || [];
  const evidence = first(payload, "evidence") || [];
  const titles = new Map(sources.map((source) => [String(first(source, "id", "source_id")), first(source, "title")]));
  return sources.map((source) => {
    const id = String(first(source, "id", "source_id"));
    const own = first(source, "evidence", "quotes") || evidence.filter((item) => String(item.source_id) === id);
    const via = discoveredLabel(first(source, "discovered_via"), (seed) => titles.get(String(seed)));
    return { id, title: first(source, "title") || id, quotes: own, via };
  });
}

function extractionEditor(payload) {
  const struck = [];
  const irrelevant = [];
  const groups = extractionSources(payload).map((source) => {
    const flag = checkbox("Not relevant", { "data-source-id": source.id });
    irrelevant.push([source.id, flag.input]);
    const quotes = source.quotes.map((quote) => {
      const id = String(first(quote, "id", "evidence_id"));
      const box = checkbox("Strike", { "data-evidence-id": id });
      struck.push([id, box.input]);
      return el(
        "li",
        { "data-evidence-id": id },
        el("blockquote", { className: "quote" }, el("p", { text: first(quote, "quote", "text") || "" })),
        el("p", { className: "meta", text: whereLabel(first(quote, "page"), first(quote, "section", "origin")) }),
        box.node,
      );
    });
    const via = source.via ? el("p", { className: "meta source-via", text: source.via }) : null;
    return el("fieldset", { className: "source-quotes-edit", "data-source-id": source.id }, el("legend", { text: source.title }), via, flag.node, el("ul", { className: "plain" }, ...quotes));
  });
  const picked = (pairs) => pairs.filter(([, input]) => input.checked).map(([id]) => id);
  return { node: el("div", { className: "stack" }, ...groups), collect: () => ({ strike: picked(struck), not_relevant: picked(irrelevant) }) };
}

// ---- synthesis: the draft report and its claims; approve, or strike claims and resynthesize ----------

function synthesisEditor(payload) {
  const report = el("div", { className: "markdown draft" });
  renderStructure(report, [first(payload, "executive_summary"), first(payload, "report", "synthesis_text")].filter(Boolean).join("\n\n"));
  const struck = [];
  const claims = (first(payload, "claims") || []).map((claim) => {
    const id = String(first(claim, "id", "claim_id"));
    const box = checkbox("Strike", { "data-claim-id": id });
    struck.push([id, box.input]);
    return el("li", { "data-claim-id": id }, el("p", { text: first(claim, "text", "claim_text") || "" }), box.node);
  });
  const node = el("div", { className: "stack" }, el("h4", { text: "Draft report" }), report, el("h4", { text: `Claims (${claims.length})` }), el("ul", { className: "plain" }, ...claims));
  const collect = () => {
    const strike = struck.filter(([, input]) => input.checked).map(([id]) => id);
    return strike.length ? { strike, resynthesize: true } : {};
  };
  return { node, collect };
}

const EDITORS = { plan: planEditor, screening: screeningEditor, extraction: extractionEditor, synthesis: synthesisEditor };

// Leaves out what the reviewer did not change, so that an untouched form approves as it stands.
function changed(phase, edits, payload) {
  if (phase !== "plan") return Object.fromEntries(Object.entries(edits).filter(([, value]) => !(Array.isArray(value) && !value.length)));
  const original = planEditor(payload).collect();
  const result = {};
  if (!sameSet(edits.connectors, original.connectors)) result.connectors = edits.connectors;
  const queries = Object.entries(edits.queries).filter(([name, list]) => JSON.stringify(list) !== JSON.stringify(original.queries[name] || []));
  if (queries.length) result.queries = Object.fromEntries(queries);
  if (edits.publication_window_years !== original.publication_window_years) result.publication_window_years = edits.publication_window_years;
  return result;
}

// checkpoint: {phase, payload, waiting_since}; onDecide(verdict, edits) sends approve or abort.
export function renderCheckpoint(container, checkpoint, onDecide) {
  const phase = checkpoint.phase;
  const payload = checkpoint.payload || {};
  const editor = (EDITORS[phase] || (() => ({ node: el("pre", { text: JSON.stringify(payload, null, 2) }), collect: () => ({}) })))(payload);
  const approve = el("button", { type: "submit", text: phase === "synthesis" ? "Approve (strikes resynthesize)" : "Approve with these edits" });
  const abort = el("button", { type: "button", className: "secondary", text: "Abort the job" });
  const form = el("form", { className: "stack", "data-phase": phase }, editor.node, el("div", { className: "row" }, approve, abort));
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    onDecide("approve", changed(phase, editor.collect(), payload));
  });
  abort.addEventListener("click", () => onDecide("abort", null));
  container.replaceChildren(
    el("h3", { id: "checkpoint-heading", tabindex: -1, text: `Waiting for your review · ${PHASE_TITLE[phase] || phase}` }),
    el("p", { className: "meta", text: checkpoint.waiting_since ? `Waiting since ${checkpoint.waiting_since}` : "" }),
    form,
  );
  container.dataset.phase = phase;
  container.hidden = false;
}
