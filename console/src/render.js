// Rendering: our own structure (headings, paragraphs, lists) from the report's Markdown, and every piece of
// retrieved text (quotes, titles, snippets, the sentences of an answer) as textContent, never as markup.

export function el(tag, attributes = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attributes)) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "text") node.textContent = value;
    else if (key === "className") node.className = value;
    else node.setAttribute(key, value === true ? "" : String(value));
  }
  for (const child of children) {
    if (child !== null && child !== undefined) node.append(child);
  }
  return node;
}

const HEADING = /^(#{1,6})\s+(.*?)\s*#*\s*$/;
const BULLET = /^\s{0,3}[-*+]\s+(.*)$/;
const NUMBERED = /^\s{0,3}\d{1,3}[.)]\s+(.*)$/;

// The block structure of `markdown` (ATX headings, paragraphs, bulleted and numbered lists), each block's
// text set as textContent: emphasis, links, images and HTML inside it show literally. A report's headings
// sit under the view's h2 and the card's h3: its top level becomes h4.
export function renderStructure(container, markdown) {
  const blocks = [];
  let paragraph = [];
  let list = null;
  const flush = () => {
    if (paragraph.length) blocks.push(el("p", { text: paragraph.join(" ") }));
    paragraph = [];
  };
  for (const line of String(markdown || "").split(/\r?\n/)) {
    const heading = HEADING.exec(line);
    const item = BULLET.exec(line) || NUMBERED.exec(line);
    if (heading || item || !line.trim()) flush();
    if (!item) list = null;
    if (heading) {
      blocks.push({ level: heading[1].length, text: heading[2] });
    } else if (item) {
      const tag = BULLET.test(line) ? "ul" : "ol";
      if (!list || list.tagName.toLowerCase() !== tag) blocks.push((list = el(tag)));
      list.append(el("li", { text: item[1] }));
    } else if (line.trim()) {
      paragraph.push(line.trim());
    }
  }
  flush();
  const levels = blocks.filter((block) => !(block instanceof Node)).map((block) => block.level);
  const shift = 4 - Math.min(4, ...levels);
  container.replaceChildren(
    ...blocks.map((block) =>
      block instanceof Node ? block : el(`h${Math.min(6, block.level + Math.max(0, shift))}`, { text: block.text }),
    ),
  );
}

// A reference marker: [3] (an answer's citation number) or [ev-…] (a job's evidence id), or a list of them
// ([ev-…, ev-…]: a statement that cites several findings).
const MARKER = /\[([A-Za-z0-9][\w.:-]{0,63}(?:,\s*[A-Za-z0-9][\w.:-]{0,63}){0,15})\]/g;

function markerLink(found, onFollow) {
  const link = el("a", { href: `#${found.target}`, className: "cite-marker", title: found.title, text: `[${found.label}]` });
  link.addEventListener("click", (event) => {
    event.preventDefault(); // the hash names the view: following a marker moves the focus, not the route
    onFollow(found.target);
  });
  return link;
}

// Links each marker outside a claim that `resolve(token)` knows ({label, target, title}) to its entry in the
// source list; markers inside a claim are the paper's own and stay text.
export function linkMarkers(container, resolve, onFollow) {
  const walker = document.createTreeWalker(container, NodeFilter.SHOW_TEXT);
  const nodes = [];
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    if (!node.parentElement.closest(".claim, .cite-marker")) nodes.push(node);
  }
  for (const node of nodes) {
    const parts = [];
    let last = 0;
    for (const match of node.data.matchAll(MARKER)) {
      const found = match[1].split(/,\s*/).map(resolve);
      if (!found.every(Boolean)) continue;
      const targets = new Map(found.map((entry) => [entry.target, entry])); // one link per source
      parts.push(node.data.slice(last, match.index), ...[...targets.values()].map((entry) => markerLink(entry, onFollow)));
      last = match.index + match[0].length;
    }
    if (!parts.length) continue;
    parts.push(node.data.slice(last));
    node.replaceWith(...parts.filter((part) => part !== ""));
  }
}

// Where a quote is: "p. 4" for a PDF page, else its origin ("abstract").
export function whereLabel(page, origin) {
  if (page !== null && page !== undefined && page !== "") return `p. ${page}`;
  return origin || "";
}

function authorsLine(authors) {
  const names = (authors || []).filter(Boolean);
  return names.length > 3 ? `${names.slice(0, 3).join(", ")} et al.` : names.join(", ");
}

function safeHref(url) {
  try {
    const parsed = new URL(url);
    return parsed.protocol === "https:" || parsed.protocol === "http:" ? parsed.href : null;
  } catch {
    return null;
  }
}

const CONNECTOR_LABEL = { semantic_scholar: "Semantic Scholar", openalex: "OpenAlex", crossref: "Crossref", arxiv: "arXiv" };

// How citation chasing found a source (`discovered_via`), in words; null for a search's hit. `titleOf`
// names the seed (a source id) by its title where the caller knows it.
export function discoveredLabel(via, titleOf = () => null) {
  if (!via || !via.method || via.method === "search") return null;
  const seed = via.seed ? `“${titleOf(via.seed) || via.seed}”` : "a seed";
  const how = via.method === "citations" ? `Found among the works citing ${seed}` : `Found in the references of ${seed}`;
  return via.connector ? `${how} (${CONNECTOR_LABEL[via.connector] || via.connector})` : how;
}

function sourceItem(source) {
  const href = safeHref(source.url);
  const facts = [authorsLine(source.authors), source.year, source.venue].filter(Boolean).join(" · ");
  return el(
    "li",
    { id: source.anchor, tabindex: -1, className: "source", "data-source-id": source.id },
    el(
      "p",
      { className: "source-title" },
      href ? el("a", { href, rel: "noopener noreferrer", target: "_blank", text: source.title || href }) : el("span", { text: source.title || "Untitled source" }),
    ),
    facts ? el("p", { className: "meta source-facts", text: facts }) : null,
    source.via ? el("p", { className: "meta source-via", text: source.via }) : null,
    source.quoted.length ? el("p", { className: "meta source-quotes", text: `Quoted: ${source.quoted.join("; ")}` }) : null,
  );
}

// sources: [{id, anchor, title, authors, year, venue, url, quoted: ["[1] p. 4", …], via}], numbered in order.
export function sourceList(container, sources) {
  container.replaceChildren();
  if (!sources.length) return;
  container.append(el("h4", { text: `Sources (${sources.length})` }), el("ol", { className: "sources" }, ...sources.map(sourceItem)));
}

// Causes in words: a heading ("Partial result" …) and one line per cause.
export function causesNotice(container, heading, causes) {
  container.replaceChildren();
  container.hidden = !causes.length;
  if (!causes.length) return;
  container.append(el("p", {}, el("strong", { text: heading })), el("ul", {}, ...causes.map((cause) => el("li", { text: cause }))));
}

export function verdictOf(raw) {
  const value = String(raw || "").toLowerCase();
  if (value.startsWith("partial")) return "partial";
  if (value.startsWith("contradict")) return "contradicted";
  if (value === "supported") return "supported";
  return "unsupported";
}

const VERDICT_LABEL = {
  supported: "supported",
  partial: "partially supported",
  unsupported: "unsupported",
  contradicted: "contradicted",
};

function claimButton(claim, onOpen, text) {
  const verdict = verdictOf(claim.verdict);
  // a span (not a button) so that a claim flows inside its sentence; role, tabindex and keys make it one
  const button = el("span", {
    role: "button",
    tabindex: 0,
    className: `claim verdict-${verdict}`,
    "data-claim-id": claim.claim_id,
    "data-verdict": verdict,
  });
  button.append(document.createTextNode(text), el("span", { className: "verdict-tag", text: VERDICT_LABEL[verdict] }));
  button.addEventListener("click", () => onOpen(claim, button));
  button.addEventListener("keydown", (event) => {
    if (event.key === "Enter" || event.key === " ") {
      event.preventDefault();
      onOpen(claim, button);
    }
  });
  return button;
}

const squash = (text) => text.replace(/\s+/g, " ").trim();

// Wraps each claim's sentence, where it sits inside one text node of `container`, in a button.
export function markClaims(container, claims, onOpen) {
  for (const claim of claims) {
    const wanted = squash(claim.claim_text || "");
    if (!wanted) continue;
    const walker = document.createTreeWalker(container, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      if (node.parentElement.closest(".claim")) continue;
      const at = node.data.indexOf(wanted);
      if (at < 0) continue;
      const match = node.splitText(at);
      match.splitText(wanted.length);
      match.replaceWith(claimButton(claim, onOpen, wanted));
      break;
    }
  }
}

// The verification table: every claim with its verdict, each one opening its citations.
export function claimsTable(container, claims, onOpen) {
  container.replaceChildren();
  if (!claims.length) return;
  const rows = claims.map((claim) =>
    el(
      "tr",
      {},
      el("td", {}, claimButton(claim, onOpen, claim.claim_text)),
      el("td", { text: VERDICT_LABEL[verdictOf(claim.verdict)] }),
      el("td", { text: typeof claim.confidence === "number" ? claim.confidence.toFixed(2) : "" }),
    ),
  );
  container.append(
    el("h4", { text: `Claims (${claims.length})` }),
    el(
      "div",
      { className: "table-wrap" },
      el(
        "table",
        { className: "claims" },
        el("thead", {}, el("tr", {}, ...["Claim", "Verdict", "Confidence"].map((h) => el("th", { scope: "col", text: h })))),
        el("tbody", {}, ...rows),
      ),
    ),
  );
}

// contradictions: the Critic's pairs of evidence ids (or {statements}); quotesById: the quotes known.
export function contradictionsList(container, contradictions, quotesById) {
  container.replaceChildren();
  if (!contradictions.length) return;
  const items = contradictions.map((c) => {
    const sides = Array.isArray(c) ? c.map((id) => quotesById.get(id) || { text: `evidence ${id}` }) : (c.statements || []).map((text) => ({ text }));
    return el(
      "li",
      {},
      el("p", { text: (!Array.isArray(c) && (c.description || c.topic)) || "These sources report different findings:" }),
      el("ul", {}, ...sides.map((side) => el("li", {}, el("q", { text: side.text }), side.title ? document.createTextNode(` — ${side.title}`) : null))),
    );
  });
  container.append(el("h4", { text: "Where the sources disagree" }), el("ul", { className: "contradictions" }, ...items));
}

// One quote in its context: the same source's other quotes around it, in text order, gaps marked "…".
function contextParagraph(quote, neighbours) {
  const paragraph = el("p", { className: "context" });
  let previousEnd = null;
  for (const item of neighbours) {
    if (previousEnd !== null) paragraph.append(document.createTextNode(item.start > previousEnd + 1 ? " … " : " "));
    if (item === quote) paragraph.append(el("mark", { text: item.text }));
    else paragraph.append(document.createTextNode(item.text));
    previousEnd = item.end;
  }
  return paragraph;
}

// items: [{title, url, text, page, where, start, end, group}] — the claim's quotes; all: every quote known.
export function showCitations(panel, body, claim, items, all) {
  const verdict = verdictOf(claim.verdict);
  body.replaceChildren(
    el("p", { className: "panel-claim" }, el("strong", { text: "Claim: " }), document.createTextNode(claim.claim_text)),
    el(
      "p",
      { className: `verdict-line verdict-${verdict}` },
      document.createTextNode(`Verdict: ${VERDICT_LABEL[verdict]}`),
      typeof claim.confidence === "number" ? document.createTextNode(` (confidence ${claim.confidence.toFixed(2)})`) : null,
      claim.notes ? document.createTextNode(` — ${claim.notes}`) : null,
    ),
  );
  if (!items.length) body.append(el("p", { text: "No quote is cited for this claim." }));
  for (const item of items) {
    const href = safeHref(item.url);
    const neighbours = all
      .filter((other) => other.group === item.group)
      .sort((a, b) => a.start - b.start);
    body.append(
      el(
        "article",
        { className: "citation" },
        el("h3", {}, href ? el("a", { href, rel: "noopener noreferrer", target: "_blank", text: item.title || href }) : el("span", { text: item.title || "Untitled source" })),
        el("p", { className: "where", text: item.where }),
        el("blockquote", { className: "quote" }, el("p", { text: item.text })),
        el("p", { className: "context-label", text: "In context:" }),
        neighbours.length > 1
          ? contextParagraph(item, neighbours)
          : el("p", { className: "context-note", text: "This is the only passage of this part of the source that was retrieved." }),
      ),
    );
  }
  panel.hidden = false;
  panel.focus();
}
