// The research console: ask (streamed), research jobs, the team library, traces.

import { getJson, getToken, loadConfig, request, setToken, stream } from "./api.js";
import { claimsTable, contradictionsList, el, markClaims, renderMarkdown, showCitations } from "./render.js";

const $ = (id) => document.getElementById(id);
const TERMINAL = new Set(["COMPLETED", "PARTIAL", "FAILED", "REFUSED"]);
const ARTIFACTS = [
  ["report.md", "Report (Markdown)"],
  ["bibliography.bib", "BibTeX"],
  ["annotated_bibliography.md", "Annotated bibliography"],
];

function say(id, text, isError = false) {
  const node = $(id);
  node.textContent = text;
  node.classList.toggle("error", isError);
}

// ---- views ---------------------------------------------------------------------------------------

function showView(name, { focus = true } = {}) {
  for (const tab of document.querySelectorAll(".tab")) {
    const current = tab.dataset.view === name;
    if (current) tab.setAttribute("aria-current", "page");
    else tab.removeAttribute("aria-current");
    $(`view-${tab.dataset.view}`).hidden = !current;
  }
  closeCitations();
  if (focus) $(`${name}-heading`).focus();
  if (location.hash !== `#${name}`) history.replaceState(null, "", `#${name}`);
  if (name === "library") refreshLibrary();
}

// ---- token ---------------------------------------------------------------------------------------

function initToken() {
  const input = $("token");
  input.value = getToken();
  const state = () => say("token-state", getToken() ? "A token is set." : "No token set.");
  state();
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

// An answer's citations as quotes: grouped by source and origin (the abstract, or one PDF page).
function answerQuotes(citations) {
  const seen = new Map();
  for (const c of citations) {
    if (seen.has(c.chunk_id)) continue;
    const where =
      c.page !== null && c.page !== undefined
        ? `Page ${c.page}, characters ${c.chunk_start}–${c.chunk_end}`
        : `${c.origin === "abstract" ? "Abstract" : c.origin}, characters ${c.chunk_start}–${c.chunk_end}`;
    seen.set(c.chunk_id, {
      id: c.chunk_id,
      title: c.title,
      url: c.url,
      text: c.snippet,
      where,
      start: c.chunk_start,
      end: c.chunk_end,
      group: `${c.source_id}|${c.origin}|${c.page ?? ""}`,
    });
  }
  return [...seen.values()];
}

// A job's evidence as quotes: grouped by source and page.
function jobQuotes(results) {
  const sources = new Map((results.sources || []).map((s) => [s.source_id, s]));
  return (results.evidence || []).map((e) => {
    const source = sources.get(e.source_id) || {};
    return {
      id: e.evidence_id,
      title: source.title,
      url: source.url,
      text: e.quote,
      where: [e.page ? `Page ${e.page}` : null, e.section ? `section ${e.section}` : null].filter(Boolean).join(", "),
      start: e.char_start ?? 0,
      end: e.char_end ?? 0,
      group: `${e.source_id}|${e.page ?? ""}`,
    };
  });
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
  $("ask-answer").replaceChildren();
  $("ask-meta").replaceChildren();
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

function showAnswer(final, contradictions) {
  $("ask-stream").hidden = true;
  if (final.refusal) {
    showRefusal($("ask-refusal"), final.refusal_reason, final.refusal_code);
  } else {
    const answer = $("ask-answer");
    renderMarkdown(answer, final.answer);
    const open = claimOpener(answerQuotes(final.citations || []), (claim) => claim.evidence_chunk_ids || []);
    markClaims(answer, final.claim_verifications || [], open);
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
  const synthesis = results.synthesis || {};
  const report = $("job-report");
  renderMarkdown(report, [synthesis.executive_summary, synthesis.synthesis_text].filter(Boolean).join("\n\n"));
  const claims = (results.claims || []).filter((c) => c.kept !== false);
  const open = claimOpener(jobQuotes(results), (claim) => claim.evidence_ids || []);
  markClaims(report, claims, open);
  claimsTable($("job-claims"), claims, open);
  $("job-meta").textContent = `Confidence ${Number(results.confidence_score || 0).toFixed(2)}${
    results.confidence_rationale ? ` · ${results.confidence_rationale}` : ""
  }`;
}

async function startJob(event) {
  event.preventDefault();
  closeCitations();
  $("job-result").hidden = true;
  $("job-refusal").hidden = true;
  $("job-report").replaceChildren();
  $("job-claims").replaceChildren();
  $("job-submit").disabled = true;
  const body = {
    research_goal: $("job-goal").value.trim(),
    scope_parameters: {
      discovery_depth: $("job-depth").value,
      temporal_boundary: { publication_window_years: Number($("job-window").value) },
    },
  };
  try {
    const started = await getJson("/api/agent/execute", { method: "POST", json: body });
    const jobId = started.job_id;
    $("job-progress-box").hidden = false;
    $("job-progress").setAttribute("value", "0");
    say("job-status", `Job ${jobId} started`);
    let status = started;
    for (;;) {
      status = await getJson(`/api/agent/status/${encodeURIComponent(jobId)}`);
      if (status.current_phase) setProgress(status.current_phase);
      if (TERMINAL.has(status.status)) break;
      await sleep(500);
    }
    say("job-status", `Job ${jobId}: ${status.status}`, status.status === "FAILED");
    if (status.status !== "FAILED") showResults(jobId, await getJson(`/api/agent/results/${encodeURIComponent(jobId)}`));
  } catch (error) {
    say("job-status", `Error: ${error.message}`, true);
  } finally {
    $("job-submit").disabled = false;
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

function openTrace(traceId) {
  $("trace-id").value = traceId;
  showView("trace");
  loadTrace();
}

async function loadTrace(event) {
  if (event) event.preventDefault();
  const traceId = $("trace-id").value.trim();
  if (!traceId) return;
  say("trace-status", "Loading…");
  $("trace-events").replaceChildren();
  $("trace-query").textContent = "";
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
  for (const tab of document.querySelectorAll(".tab")) tab.addEventListener("click", () => showView(tab.dataset.view));
  for (const heading of document.querySelectorAll(".view > h2")) heading.setAttribute("tabindex", "-1");
  $("ask-form").addEventListener("submit", ask);
  $("ask-cancel").addEventListener("click", () => asking && asking.abort());
  $("job-form").addEventListener("submit", startJob);
  $("library-form").addEventListener("submit", upload);
  $("library-refresh").addEventListener("click", refreshLibrary);
  $("trace-form").addEventListener("submit", loadTrace);
  $("citations-close").addEventListener("click", closeCitations);
  document.addEventListener("keydown", (event) => {
    if (event.key === "Escape") closeCitations();
  });
  const initial = location.hash.slice(1);
  showView(["ask", "job", "library", "trace"].includes(initial) ? initial : "ask", { focus: false });
  document.body.dataset.ready = "true";
}

start();
