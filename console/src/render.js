// Rendering of untrusted text: Markdown through marked then DOMPurify; everything else as textContent.

import DOMPurify from "dompurify";
import { marked } from "marked";

DOMPurify.addHook("afterSanitizeAttributes", (node) => {
  if (node.tagName === "A") {
    node.setAttribute("rel", "noopener noreferrer");
    node.setAttribute("target", "_blank");
  }
});

const PURIFY = {
  RETURN_DOM_FRAGMENT: true,
  FORBID_TAGS: ["style", "img", "form", "input", "button", "textarea", "select", "iframe", "svg", "math"],
  FORBID_ATTR: ["style", "id", "class"],
};

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

export function renderMarkdown(container, markdown) {
  container.replaceChildren(DOMPurify.sanitize(marked.parse(markdown || "", { async: false }), PURIFY));
  // a report's headings sit under the view's h2 and the card's h3: its top level becomes h4
  const headings = [...container.querySelectorAll("h1, h2, h3, h4, h5, h6")];
  const shift = 4 - Math.min(4, ...headings.map((h) => Number(h.tagName[1])));
  for (const heading of shift > 0 ? headings : []) {
    const level = Math.min(6, Number(heading.tagName[1]) + shift);
    const replacement = el(`h${level}`);
    replacement.append(...heading.childNodes);
    heading.replaceWith(replacement);
  }
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

function safeHref(url) {
  try {
    const parsed = new URL(url);
    return parsed.protocol === "https:" || parsed.protocol === "http:" ? parsed.href : null;
  } catch {
    return null;
  }
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
