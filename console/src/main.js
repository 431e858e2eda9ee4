// The research console: ask (streamed), research jobs, the team library, traces.

import { apiUrl, getJson, getToken, loadConfig, request, setToken, stream } from "./api.js";
import { renderCheckpoint } from "./checkpoint.js";
import {
  causesNotice,
  claimsTable,
  contradictionsList,
  el,
  linkMarkers,
  markClaims,
  renderStructure,
  showCitations,
  sourceList,
} from "./render.js";
import { answerQuotes, answerSources, jobQuotes, jobSources } from "./sources.js";

const $ = (id) => document.getElementById(id);
const TERMINAL = new Set(["COMPLETED", "PARTIAL", "FAILED", "REFUSED"]);
const ARTIFACTS = [
  ["report.md", "Report (Markdown)"],
  ["bibliography.bib", "BibTeX"],
  ["references.ris", "RIS (Zotero, EndNote, Mendeley)"],
  ["references.csl.json", "CSL-JSON (Zotero, Pandoc)"],
  ["annotated_bibliography.md", "Annotated bibliography"],
  ["prisma_flow.svg", "PRISMA 2020 flow diagram (SVG)"],
];

function say(id, text, isError = false) {
  const node = $(id);
  node.textContent = text;
  node.classList.toggle("error", isError);
}

// ---- views and the URL hash ---------------------------------------------------------------------
// The hash names the view and what it shows: #ask, #job, #job/<job id>, #library, #trace/<trace id>.

const VIEWS = ["ask", "job", "library", "trace"];
const lastHash = {}; // per view, the hash it was last shown with: its tab returns there

function showView(name, { focus = true } = {}) {
  for (const tab of document.querySelectorAll(".tab")) {
    const current = tab.dataset.view === name;
    if (current) tab.setAttribute("aria-current", "page");
    else tab.removeAttribute("aria-current");
    $(`view-${tab.dataset.view}`).hidden = !current;
  }
  closeCitations();
  if (focus) $(`${name}-heading`).focus();
  if (name === "library") refreshLibrary();
}

function parseHash() {
  const [view, ...rest] = location.hash.slice(1).split("/");
  if (!VIEWS.includes(view)) return { view: "ask", id: "" };
  return { view, id: rest.length ? decodeURIComponent(rest.join("/")) : "" };
}

function navigate(hash) {
  if (location.hash === hash) route();
  else location.hash = hash; // a history entry: back and forward return to it
}

function route({ focus = true } = {}) {
  const { view, id } = parseHash();
  lastHash[view] = location.hash || `#${view}`;
  showView(view, { focus });
  if (view === "job" && id !== (followedJob || "")) {
    if (id) followJob(id);
    else stopFollowing(); // #job alone is the empty form, as a reload of it shows
  }
  if (view === "trace" && id !== (shownTrace || "")) {
    if (id) loadTrace(id);
    else clearTrace();
  }
}

function followMarker(target) {
  const entry = $(target);
  if (!entry) return;
  entry.scrollIntoView({ block: "nearest" });
  entry.focus();
}

// ---- token ---------------------------------------------------------------------------------------

function initToken() {
  const input = $("token");
  input.value = getToken();
  const state = () => say("token-state", getToken() ? "A token is set." : "No token set.");
  state();
  const mcp = new URL(apiUrl("/mcp"), location.href).href; // what an assistant's MCP client connects to
  $("mcp-url").href = mcp;
  $("mcp-url").textContent = mcp;
  $("token-form").addEventListener("submit", (event) => {
    event.preventDefault();
    setToken(input.value.trim());
    state();
  });
  $("token-clear").addEventListener("click", () => {
    input.value = "";
    setToken("");
    state();
  });
}

// ---- citations panel -----------------------------------------------------------------------------

let returnFocus = null;

function openCitations(claim, opener, items, all) {
  returnFocus = opener;
  showCitations($("citations"), $("citations-body"), claim, items, all);
}

function closeCitations() {
  const panel = $("citations");
  if (panel.hidden) return;
  panel.hidden = true;
  if (returnFocus && document.contains(returnFocus)) returnFocus.focus();
  returnFocus = null;
}

function claimOpener(quotes, idsOf) {
  const byId = new Map(quotes.map((q) => [q.id, q]));
  return (claim, opener) => {
    const items = idsOf(claim)
      .map((id) => byId.get(id))
      .filter(Boolean);
    openCitations(claim, opener, items, quotes);
  };
}

// ---- ask -----------------------------------------------------------------------------------------

let asking = null;

function stageItem(event, elapsed) {
  return el(
    "li",
    { "data-name": event.name || event.event_type },
    el("span", { className: "stage-name", text: event.name || event.event_type }),
    el("span", { className: "stage-agent", text: event.agent }),
    el("span", { className: "stage-time", text: `+${elapsed} ms` }),
  );
}

function resetAsk() {
  $("ask-stages").replaceChildren();
  $("ask-stream").textContent = "";
  $("ask-stream").hidden = true;
  $("ask-refusal").hidden = true;
  $("ask-refusal").replaceChildren();
  causesNotice($("ask-partial"), "", []);
  $("ask-answer").replaceChildren();
  $("ask-meta").replaceChildren();
  $("ask-sources").replaceChildren();
  $("ask-claims").replaceChildren();
  $("ask-contradictions").replaceChildren();
  closeCitations();
}

function traceButton(traceId) {
  const button = el("button", { type: "button", className: "link", text: `Open trace ${traceId}` });
  button.addEventListener("click", () => openTrace(traceId));
  return button;
}

function showRefusal(container, reason, code) {
  container.replaceChildren(
    el("p", {}, el("strong", { text: "Refused: " }), document.createTextNode(reason || "the evidence does not support an answer")),
    code ? el("p", { className: "meta", text: `Reason code: ${code}` }) : null,
  );
  container.hidden = false;
}

const connectorCauses = (failed) => Object.entries(failed || {}).map(([name, reason]) => `${name} could not be searched: ${reason}`);

// The answer as our structure with its sentences as text, claims marked, [n] linked to the source list.
function showAnswer(final, contradictions) {
  $("ask-stream").hidden = true;
  causesNotice($("ask-partial"), "Partial: the answer was written without some sources", connectorCauses(final.failed_connectors));
  const { sources, resolve } = answerSources(final);
  if (final.refusal) {
    showRefusal($("ask-refusal"), final.refusal_reason, final.refusal_code);
  } else {
    const answer = $("ask-answer");
    renderStructure(answer, final.answer);
    const open = claimOpener(answerQuotes(final.citations || []), (claim) => claim.evidence_chunk_ids || []);
    markClaims(answer, final.claim_verifications || [], open);
    linkMarkers(answer, resolve, followMarker);
    sourceList($("ask-sources"), sources);
    claimsTable($("ask-claims"), final.claim_verifications || [], open);
  }
  const quotes = new Map(answerQuotes(final.citations || []).map((q) => [q.id, q]));
  contradictionsList($("ask-contradictions"), contradictions, quotes);
  $("ask-meta").replaceChildren(
    document.createTextNode(`Confidence ${Number(final.confidence_score || 0).toFixed(2)} · `),
    traceButton(final.trace_id),
  );
}

async function ask(event) {
  event.preventDefault();
  const query = $("ask-query").value.trim();
  if (!query) return;
  resetAsk();
  const options = {};
  if ($("ask-preset").value) options.preset = $("ask-preset").value;
  if ($("ask-focus").value && $("ask-focus").value !== "general") options.focus_mode = $("ask-focus").value;
  asking = new AbortController();
  $("ask-submit").disabled = true;
  $("ask-cancel").disabled = false;
  say("ask-status", "Searching and reading…");
  const started = performance.now();
  const contradictions = [];
  let finished = false;
  try {
    for await (const { event: name, data } of stream("/v1/query/stream", { query, options }, asking.signal)) {
      if (name === "trace_event") {
        $("ask-stages").append(stageItem(data, Math.round(performance.now() - started)));
        for (const c of (data.payload && data.payload.contradictions) || []) contradictions.push(c);
      } else if (name === "answer_delta") {
        const streamed = $("ask-stream");
        streamed.hidden = false;
        streamed.append(document.createTextNode(data.text || ""));
        say("ask-status", "Writing…");
      } else if (name === "citation") {
        say("ask-status", `Verifying · ${(data.citations || []).length} citations`);
      } else if (name === "final") {
        finished = true;
        showAnswer(data, contradictions);
        say("ask-status", data.refusal ? "Done: refused" : "Done: answered");
      } else if (name === "error") {
        finished = true;
        say("ask-status", `Error: ${(data.error && data.error.message) || "the answer failed"}`, true);
      }
    }
    if (!finished) say("ask-status", "The stream ended without an answer.", true);
  } catch (error) {
    say("ask-status", error.name === "AbortError" ? "Stopped." : `Error: ${error.message}`, error.name !== "AbortError");
  } finally {
    asking = null;
    $("ask-submit").disabled = false;
    $("ask-cancel").disabled = true;
  }
}

// ---- research job --------------------------------------------------------------------------------

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

function setProgress(phase) {
  const value = Math.max(0, Math.min(100, Number(phase.progress_percentage) || 0));
  const bar = $("job-progress");
  if (value >= Number(bar.getAttribute("value") || 0)) bar.setAttribute("value", String(value));
  bar.textContent = `${value}%`;
  $("job-phase").textContent = `${phase.phase_name || "…"} · ${value}%`;
  $("job-phase-description").textContent = phase.phase_description || "";
  $("job-actions").replaceChildren(...(phase.intelligent_actions_taken || []).map((a) => el("li", { text: a })));
}

async function download(jobId, name) {
  try {
    const response = await request(`/api/agent/results/${encodeURIComponent(jobId)}/artifacts/${name}`);
    const url = URL.createObjectURL(await response.blob());
    const link = el("a", { href: url, download: `${jobId}-${name}` });
    document.body.append(link);
    link.click();
    link.remove();
    setTimeout(() => URL.revokeObjectURL(url), 10_000);
    say("job-status", `Downloaded ${name}`);
  } catch (error) {
    say("job-status", `Download failed: ${error.message}`, true);
  }
}

// The job's PRISMA 2020 flow diagram, fetched with the caller's credentials and shown as an image: a
// data: URL, which the console's Content-Security-Policy allows for images (an SVG in an <img> runs no
// script). Its text alternative is the flow's counts.
async function showPrisma(jobId, results) {
  const figure = $("job-prisma");
  const flow = (results.execution_summary || {}).prisma_flow;
  if (!flow || !("prisma_flow.svg" in (results.artifacts || {}))) return;
  let svg;
  try {
    const response = await request(`/api/agent/results/${encodeURIComponent(jobId)}/artifacts/prisma_flow.svg`);
    svg = await response.text();
  } catch (error) {
    svg = null;
    if (followedJob === jobId) {
      figure.replaceChildren(el("p", { className: "error", text: `The PRISMA diagram could not be loaded: ${error.message}` }));
      figure.hidden = false;
    }
  }
  if (svg === null || followedJob !== jobId) return; // failed, or another job is shown now
  const identified = Object.values(flow.identified || {}).reduce((sum, n) => sum + n, 0);
  const alt =
    `PRISMA 2020 flow: ${identified} records identified, ${flow.duplicates_removed} duplicates removed, ` +
    `${flow.screened} screened, ${flow.sought_for_retrieval} sought for retrieval, ` +
    `${flow.assessed_full_text} assessed, ${flow.included} included`;
  figure.replaceChildren(
    el("img", { id: "job-prisma-image", src: `data:image/svg+xml;charset=utf-8,${encodeURIComponent(svg)}`, alt }),
    el("figcaption", { text: "PRISMA 2020 flow of this job" }),
  );
  figure.hidden = false;
}

// What a PARTIAL job lost, in the API's words, and the sources that could not be read.
function partialCauses(results) {
  const summary = results.execution_summary || {};
  const causes = [...(summary.partial_reasons || [])];
  for (const name of summary.failed_connectors || []) {
    if (!causes.some((cause) => cause.startsWith(`${name} `))) causes.push(`${name} could not be searched`);
  }
  causes.push(...Object.values(summary.queries_not_run || {}));
  for (const source of results.sources || []) {
    if (source.failure_reason) causes.push(`${source.title || source.source_id}: ${source.failure_reason}`);
  }
  return causes;
}

function showResults(jobId, results) {
  $("job-result").hidden = false;
  const available = results.artifacts || {};
  $("job-downloads").replaceChildren(
    ...ARTIFACTS.filter(([name]) => name in available).map(([name, label]) => {
      const button = el("button", { type: "button", "data-artifact": name, text: `Download ${label}` });
      button.addEventListener("click", () => download(jobId, name));
      return button;
    }),
    traceButton(jobId),
  );
  if (results.refusal) showRefusal($("job-refusal"), results.refusal_reason, null);
  causesNotice($("job-partial"), "Partial: this report lost coverage because", results.status === "PARTIAL" ? partialCauses(results) : []);
  const synthesis = results.synthesis || {};
  const report = $("job-report");
  renderStructure(report, [synthesis.executive_summary, synthesis.synthesis_text].filter(Boolean).join("\n\n"));
  const claims = (results.claims || []).filter((c) => c.kept !== false);
  const open = claimOpener(jobQuotes(results), (claim) => claim.evidence_ids || []);
  const { sources, resolve } = jobSources(results);
  markClaims(report, claims, open);
  linkMarkers(report, resolve, followMarker);
  sourceList($("job-sources"), sources);
  claimsTable($("job-claims"), claims, open);
  showPrisma(jobId, results);
  $("job-meta").textContent = `Confidence ${Number(results.confidence_score || 0).toFixed(2)}${
    results.confidence_rationale ? ` · ${results.confidence_rationale}` : ""
  }`;
}

function resetJob() {
  closeCitations();
  for (const id of ["job-result", "job-refusal", "job-partial", "job-checkpoint", "job-prisma"]) $(id).hidden = true;
  for (const id of ["job-report", "job-sources", "job-claims", "job-checkpoint", "job-prisma"]) $(id).replaceChildren();
  $("job-progress").setAttribute("value", "0");
}

async function startJob(event) {
  event.preventDefault();
  $("job-submit").disabled = true;
  const body = {
    research_goal: $("job-goal").value.trim(),
    scope_parameters: {
      discovery_depth: $("job-depth").value,
      temporal_boundary: { publication_window_years: Number($("job-window").value) },
    },
  };
  const checkpoints = [...document.querySelectorAll("#job-checkpoints input:checked")].map((box) => box.value);
  if (checkpoints.length) body.scope_parameters.human_checkpoints = checkpoints;
  try {
    const started = await getJson("/api/agent/execute", { method: "POST", json: body });
    navigate(`#job/${encodeURIComponent(started.job_id)}`);
  } catch (error) {
    say("job-status", `Error: ${error.message}`, true);
  } finally {
    $("job-submit").disabled = false;
  }
}

// ---- a job followed to its end, through its checkpoints ---------------------------------------------

let followedJob = null;
let shownCheckpoint = null; // "<phase>|<waiting_since>" of the checkpoint on screen
let decidedCheckpoint = null; // …and of the last one decided, which a status polled meanwhile may still show

async function decide(jobId, verdict, edits) {
  const path = `/api/agent/checkpoint/${encodeURIComponent(jobId)}/${verdict}`;
  try {
    await getJson(path, { method: "POST", json: edits && Object.keys(edits).length ? edits : undefined });
    decidedCheckpoint = shownCheckpoint;
    $("job-checkpoint").hidden = true;
    $("job-heading").focus(); // the form that held the focus is gone
    say("job-status", verdict === "approve" ? `Job ${jobId}: approved, continuing` : `Job ${jobId}: aborted`);
  } catch (error) {
    say("job-status", `Could not ${verdict}: ${error.message}`, true); // a 400 names the unknown ids
  }
}

async function showCheckpoint(jobId) {
  let checkpoint;
  try {
    checkpoint = await getJson(`/api/agent/checkpoint/${encodeURIComponent(jobId)}`);
  } catch (error) {
    if (error.status === 409) return; // decided meanwhile: nothing waits
    throw error;
  }
  const key = `${checkpoint.phase}|${checkpoint.waiting_since}`;
  if (key === decidedCheckpoint || (key === shownCheckpoint && !$("job-checkpoint").hidden)) return; // keeps the edits
  shownCheckpoint = key;
  renderCheckpoint($("job-checkpoint"), checkpoint, (verdict, edits) => decide(jobId, verdict, edits));
  say("job-status", `Job ${jobId} waits for your review of its ${checkpoint.phase}`);
  $("checkpoint-heading").focus();
}

function stopFollowing() {
  followedJob = null;
  resetJob();
  $("job-progress-box").hidden = true;
  say("job-status", "");
}

// Polls the job until it ends (or another job is followed), showing each checkpoint it waits at.
async function followJob(jobId) {
  followedJob = jobId;
  shownCheckpoint = null;
  resetJob();
  $("job-progress-box").hidden = false;
  say("job-status", `Job ${jobId} started`);
  try {
    let status;
    for (;;) {
      status = await getJson(`/api/agent/status/${encodeURIComponent(jobId)}`);
      if (followedJob !== jobId) return;
      if (status.current_phase) setProgress(status.current_phase);
      if (TERMINAL.has(status.status)) break;
      if (status.awaiting_checkpoint) await showCheckpoint(jobId);
      else $("job-checkpoint").hidden = true;
      await sleep(500);
    }
    $("job-checkpoint").hidden = true;
    const failure = status.status === "FAILED" && status.failure_reason ? ` · ${status.failure_reason}` : "";
    say("job-status", `Job ${jobId}: ${status.status}${failure}`, status.status === "FAILED");
    if (status.status !== "FAILED") showResults(jobId, await getJson(`/api/agent/results/${encodeURIComponent(jobId)}`));
  } catch (error) {
    if (followedJob === jobId) say("job-status", `Error: ${error.message}`, true);
  }
}

// ---- library -------------------------------------------------------------------------------------

async function refreshLibrary() {
  let listed;
  try {
    listed = await getJson("/v1/documents?limit=1000");
  } catch (error) {
    say("library-status", `Could not list the library: ${error.message}`, true);
    return;
  }
  const rows = listed.documents.map((d) =>
    el(
      "tr",
      { "data-document-id": d.document_id },
      el("td", { text: d.title || "(untitled)" }),
      el("td", { text: d.filename }),
      el("td", { text: d.pages ?? "" }),
      el("td", { text: d.status }),
      el("td", { text: d.uploaded_at }),
      el("td", {}, el("code", { text: d.document_id })),
    ),
  );
  $("library-rows").replaceChildren(...rows);
  if (!rows.length) $("library-rows").append(el("tr", {}, el("td", { colspan: 6, text: "The team library is empty." })));
}

async function upload(event) {
  event.preventDefault();
  const files = [...$("library-file").files];
  if (!files.length) return;
  $("library-submit").disabled = true;
  let done = 0;
  try {
    for (const file of files) {
      say("library-status", `Uploading ${file.name}…`);
      const form = new FormData();
      form.append("file", file, file.name);
      await getJson("/v1/documents", { method: "POST", body: form });
      done += 1;
    }
    say("library-status", `Uploaded ${done} of ${files.length} file(s)`);
    $("library-form").reset();
  } catch (error) {
    say("library-status", `Upload failed after ${done} of ${files.length}: ${error.message}`, true);
  } finally {
    $("library-submit").disabled = false;
    await refreshLibrary();
  }
}

// ---- traces --------------------------------------------------------------------------------------

let shownTrace = null;

function openTrace(traceId) {
  navigate(`#trace/${encodeURIComponent(traceId)}`);
}

function clearTrace() {
  shownTrace = null;
  $("trace-id").value = "";
  say("trace-status", "");
  $("trace-events").replaceChildren();
  $("trace-query").textContent = "";
}

async function loadTrace(traceId) {
  clearTrace();
  shownTrace = traceId;
  $("trace-id").value = traceId;
  say("trace-status", "Loading…");
  try {
    const trace = await getJson(`/v1/traces/${encodeURIComponent(traceId)}`);
    $("trace-query").textContent = `Query: ${trace.query}`;
    const times = trace.events.map((e) => Date.parse(e.timestamp));
    const first = times.length ? times[0] : 0;
    $("trace-events").replaceChildren(
      ...trace.events.map((e, index) => {
        const since = Math.round(times[index] - first);
        const step = index ? Math.round(times[index] - times[index - 1]) : 0;
        return el(
          "li",
          { className: "trace-event" },
          el(
            "p",
            { className: "trace-head" },
            el("span", { className: "stage-name", text: e.name || e.event_type }),
            el("span", { className: "stage-agent", text: `${e.agent} · ${e.event_type}` }),
            el("span", { className: "stage-time", text: `+${since} ms (step ${step} ms)` }),
          ),
          el("p", { className: "meta", text: e.timestamp }),
          el("details", {}, el("summary", { text: "Payload" }), el("pre", { text: JSON.stringify(e.payload, null, 2) })),
        );
      }),
    );
    say("trace-status", `${trace.events.length} events`);
  } catch (error) {
    say("trace-status", `Error: ${error.message}`, true);
  }
}

// ---- start ---------------------------------------------------------------------------------------

async function start() {
  await loadConfig();
  initToken();
  for (const tab of document.querySelectorAll(".tab")) {
    tab.addEventListener("click", () => navigate(lastHash[tab.dataset.view] || `#${tab.dataset.view}`));
  }
  for (const heading of document.querySelectorAll(".view > h2")) heading.setAttribute("tabindex", "-1");
  $("ask-form").addEventListener("submit", ask);
  $("ask-cancel").addEventListener("click", () => asking && asking.abort());
  $("job-form").addEventListener("submit", startJob);
  $("library-form").addEventListener("submit", upload);
  $("library-refresh").addEventListener("click", refreshLibrary);
  $("trace-form").addEventListener("submit", (event) => {
    event.preventDefault();
    const traceId = $("trace-id").value.trim();
    if (traceId) shownTrace = null; // the form loads it again even when the hash names it already
    if (traceId) openTrace(traceId);
  });
  $("citations-close").addEventListener("click", closeCitations);
  document.addEventListener("keydown", (event) => {
    if (event.key === "Escape") closeCitations();
  });
  window.addEventListener("hashchange", () => route());
  route({ focus: false });
  document.body.dataset.ready = "true";
}

start();
