// The question page: a conversation. Each question is POSTed to /v1/ask with stream: true (and the earlier turns
// as `history` when the server takes it); the Server-Sent Events are shown as they arrive, with the answer's [n]
// markers linked to the passages. Earlier turns stay above, newest last. Text from the server is only ever set as
// textContent. Helpers for papers, copying and errors are in papers.js.
"use strict";

const form = document.getElementById("ask-form");
const queryInput = document.getElementById("query");
const button = document.getElementById("ask-button");
const statusLine = document.getElementById("status");
const answerSection = document.getElementById("answer-section");
const answerBox = document.getElementById("answer");
const askedText = document.getElementById("asked-text");
const resolvedNote = document.getElementById("resolved-note");
const coverageNote = document.getElementById("coverage-note");
const legend = document.getElementById("answer-legend");
const actions = document.getElementById("answer-actions");
const findingsSection = document.getElementById("findings-section");
const findingList = document.getElementById("findings");
const passagesSection = document.getElementById("passages-section");
const passageList = document.getElementById("passages");
const threadSection = document.getElementById("thread-section");
const thread = document.getElementById("thread");
const keyRow = document.getElementById("key-row");
const keyInput = document.getElementById("api-key");

const MARKER = /\[(\d{1,2}(?:\s*,\s*\d{1,2})*)\]/g;
const MAX_RETRIES = 5;
let passagesByNumber = new Map();
let turns = []; // finished turns: { question, answer, doc_ids }
let current = null; // the turn on screen: { question, done }
let retryTimer = null;
let historyLimits = null; // { turns, answer, docIds } when the server's AskRequest takes `history`

keyInput.value = localStorage.getItem(KEY_STORAGE) || "";
if (keyInput.value) keyRow.hidden = false;

// Once at load: does the server take `history`, and within which limits?
const schemaReady = fetch("/openapi.json").then((response) => (response.ok ? response.json() : null)).then((spec) => {
  const schemas = (spec && spec.components && spec.components.schemas) || {};
  const history = ((schemas.AskRequest || {}).properties || {}).history;
  if (!history) return;
  const ref = history.items && history.items.$ref ? history.items.$ref.split("/").pop() : null;
  const turn = ((ref ? schemas[ref] : history.items) || {}).properties || {};
  historyLimits = {
    turns: history.maxItems || 10,
    answer: (turn.answer && turn.answer.maxLength) || 8000,
    docIds: (turn.doc_ids && turn.doc_ids.maxItems) || 10,
  };
}).catch(() => { historyLimits = null; });

function setStatus(message, kind = "info") {
  statusLine.textContent = message;
  statusLine.className = kind;
}

function requestBody() {
  const body = { query: queryInput.value.trim(), stream: true };
  const filters = {};
  const yearMin = document.getElementById("year-min").value;
  const yearMax = document.getElementById("year-max").value;
  const jel = document.getElementById("jel").value.trim();
  if (yearMin) filters.year_min = Number(yearMin);
  if (yearMax) filters.year_max = Number(yearMax);
  if (jel) filters.jel_prefix = jel;
  if (Object.keys(filters).length) body.filters = filters;
  if (historyLimits && turns.length) {
    body.history = turns.slice(-historyLimits.turns).map((turn) => ({
      question: turn.question,
      answer: turn.answer.slice(0, historyLimits.answer),
      doc_ids: turn.doc_ids.slice(0, historyLimits.docIds),
    }));
  }
  return body;
}

// Text with its [n] markers as links to the passages they cite.
function withMarkerLinks(text) {
  const fragment = document.createDocumentFragment();
  let last = 0;
  for (const match of text.matchAll(MARKER)) {
    fragment.append(text.slice(last, match.index));
    const numbers = match[1].split(",").map((n) => n.trim());
    fragment.append("[");
    numbers.forEach((number, i) => {
      if (i) fragment.append(", ");
      const link = document.createElement("a");
      link.href = `#passage-${number}`;
      link.className = "marker";
      link.textContent = number;
      link.setAttribute("aria-label", `passage ${number}`);
      fragment.append(link);
    });
    fragment.append("]");
    last = match.index + match[0].length;
  }
  fragment.append(text.slice(last));
  return fragment;
}

function renderPassages(passages) {
  passageList.replaceChildren();
  passagesByNumber = new Map();
  for (const passage of passages) {
    const item = document.createElement("li");
    item.id = `passage-${passage.number}`;
    item.tabIndex = -1;
    const doc = passage.document;
    const title = document.createElement("h3");
    title.textContent = `[${passage.number}] ${paperLabel(doc.title, passage.text)}`;
    const meta = document.createElement("p");
    meta.className = "meta";
    const parts = [dateLabel(doc.date, doc.year), doc.authors.join("; ")].filter(Boolean);
    meta.textContent = parts.join(" · ");
    if (doc.doi) {
      const link = document.createElement("a");
      link.href = `https://doi.org/${doc.doi}`;
      link.textContent = `doi:${doc.doi}`;
      link.rel = "noopener noreferrer";
      meta.append(parts.length ? " · " : "", link);
    }
    const text = document.createElement("p");
    text.className = "passage-text";
    text.textContent = passage.text;
    item.append(title, meta, text);
    passageList.append(item);
    passagesByNumber.set(passage.number, { element: text, text: passage.text, document: doc });
  }
  passagesSection.hidden = passages.length === 0;
}

// Mark, in each cited passage, the sentence that supports the answer. Findings are drawn from the whole abstract,
// so a supporting sentence outside the retrieved chunk is shown, marked, after it.
function highlightSupport(citations) {
  const sentences = new Map();
  for (const citation of citations) {
    if (!sentences.has(citation.passage)) sentences.set(citation.passage, new Set());
    sentences.get(citation.passage).add(citation.supporting_sentence);
  }
  for (const [number, supporting] of sentences) {
    const passage = passagesByNumber.get(number);
    if (!passage) continue;
    const fragment = document.createDocumentFragment();
    let rest = passage.text;
    // In the passage's order: a finding's second sentence may come before its first in the abstract.
    const ordered = [...supporting].sort((a, b) => passage.text.indexOf(a) - passage.text.indexOf(b));
    const elsewhere = [];
    for (const sentence of ordered) {
      const at = rest.indexOf(sentence);
      if (at < 0) {
        if (!passage.text.includes(sentence)) elsewhere.push(sentence);
        continue;
      }
      fragment.append(rest.slice(0, at));
      const mark = document.createElement("mark");
      mark.textContent = sentence;
      fragment.append(mark);
      rest = rest.slice(at + sentence.length);
    }
    fragment.append(rest);
    passage.element.replaceChildren(fragment);
    passage.element.parentElement.querySelector(".passage-elsewhere")?.remove();
    if (elsewhere.length) {
      const more = document.createElement("p");
      more.className = "passage-text passage-elsewhere";
      more.append("Elsewhere in its abstract: ");
      elsewhere.forEach((sentence, index) => {
        const mark = document.createElement("mark");
        mark.textContent = sentence;
        more.append(index ? " … " : "", mark);
      });
      passage.element.after(more);
    }
  }
}

function actionButton(label, action, docId) {
  const control = document.createElement("button");
  control.type = "button";
  control.className = "secondary small";
  control.dataset.action = action;
  control.dataset.docId = docId;
  control.textContent = label;
  return control;
}

// One card per paper the answer is written from, side by side, so that papers that disagree stay apart.
function renderFindings(findings) {
  findingList.replaceChildren();
  findings.forEach((finding, index) => {
    const item = document.createElement("li");
    item.className = finding.supported ? "finding" : "finding unsupported";
    const passage = passagesByNumber.get(finding.passage) || { text: "", document: {} };
    const when = dateLabel(passage.document.date, finding.year);
    const heading = document.createElement("a");
    heading.href = `#passage-${finding.passage}`;
    heading.className = "finding-paper";
    heading.textContent = `[${finding.passage}] ${paperLabel(finding.title, passage.text)}${when ? ` (${when})` : ""}`;
    const text = document.createElement("p");
    text.append(withMarkerLinks(finding.text));
    const support = document.createElement("p");
    support.className = "meta";
    support.textContent = finding.supported ? "Supported by its abstract." : "Not verified against its abstract.";
    const tools = document.createElement("div");
    tools.className = "actions";
    const related = actionButton("Related", "related", finding.doc_id);
    related.setAttribute("aria-expanded", "false");
    related.setAttribute("aria-controls", `related-${index}`);
    tools.append(actionButton("Copy BibTeX", "copy-bibtex", finding.doc_id), related);
    const list = document.createElement("ul");
    list.id = `related-${index}`;
    list.className = "related";
    list.hidden = true;
    item.append(heading, text, support, tools, list);
    findingList.append(item);
  });
  findingsSection.hidden = findings.length === 0;
}

function renderFinal(done) {
  answerBox.replaceChildren();
  const paragraph = document.createElement("p");
  const sentences = done.sentences.length ? done.sentences : [{ text: done.answer, supported: true }];
  sentences.forEach((sentence, i) => {
    const span = document.createElement("span");
    span.className = sentence.supported ? "sentence" : "sentence unsupported";
    if (!sentence.supported) span.title = "No passage supports this sentence.";
    span.append(withMarkerLinks(sentence.text));
    if (i) paragraph.append(" ");
    paragraph.append(span);
  });
  answerBox.append(paragraph);
  const findings = done.findings || [];
  renderFindings(findings);
  legend.hidden = !done.unsupported_sentences.length;
  highlightSupport(done.citations);
  const notes = {
    not_covered: "The indexed abstracts do not cover this question. The closest passages are listed below.",
    partial: "The closest paper may not address this question directly; read the answer with that in mind.",
  };
  coverageNote.hidden = !notes[done.coverage];
  coverageNote.textContent = notes[done.coverage] || "";
  coverageNote.className = `note ${done.coverage}`;
  const resolved = done.resolved_query;
  resolvedNote.hidden = !(resolved && resolved !== current.question);
  resolvedNote.textContent = resolvedNote.hidden ? "" : `Answered as: ${resolved}`;
  const docIds = findings.map((finding) => finding.doc_id);
  answerSection.dataset.answer = done.answer;
  answerSection.dataset.docIds = docIds.join("\n");
  actions.hidden = false;
  actions.querySelectorAll("[data-action=bibtex-all], [data-action=download]").forEach((control) => {
    control.hidden = docIds.length === 0;
  });
  turns.push({ question: current.question, answer: done.answer, doc_ids: docIds });
  current.done = true;
  const seconds = ((done.timings_ms.generate || 0) / 1000).toFixed(1);
  setStatus(done.coverage === "not_covered" ? "Not covered by the indexed abstracts." : `Answered in ${seconds} s.`);
  queryInput.value = "";
  document.getElementById("query-label").textContent = "Ask a follow-up question";
}

// The finished turn on screen moves into the thread, as a copy whose ids (and the links to them) are its own.
function archiveCurrentTurn() {
  if (!current || !current.done) return;
  const prefix = `t${thread.children.length + 1}-`;
  const item = document.createElement("li");
  item.className = "turn";
  const answer = answerSection.cloneNode(true);
  const passages = document.createElement("details");
  const summary = document.createElement("summary");
  summary.textContent = `Passages (${passageList.children.length})`;
  passages.append(summary, passageList.cloneNode(true));
  const copy = document.createElement("div");
  copy.append(...answer.childNodes);
  if (passageList.children.length) copy.append(passages);
  for (const element of copy.querySelectorAll("[id]")) element.id = prefix + element.id;
  for (const element of copy.querySelectorAll("[aria-controls]")) {
    element.setAttribute("aria-controls", prefix + element.getAttribute("aria-controls"));
  }
  for (const link of copy.querySelectorAll("a[href^='#']")) link.setAttribute("href", `#${prefix}${link.getAttribute("href").slice(1)}`);
  item.dataset.answer = answerSection.dataset.answer || "";
  item.dataset.docIds = answerSection.dataset.docIds || "";
  item.append(...copy.childNodes);
  thread.append(item);
  threadSection.hidden = false;
}

function clearCurrentTurn() {
  answerBox.replaceChildren();
  passageList.replaceChildren();
  findingList.replaceChildren();
  for (const element of [coverageNote, resolvedNote, legend, findingsSection, answerSection, passagesSection, actions]) {
    element.hidden = true;
  }
  current = null;
}

function newConversation() {
  clearTimeout(retryTimer);
  turns = [];
  thread.replaceChildren();
  threadSection.hidden = true;
  clearCurrentTurn();
  setStatus("");
  document.getElementById("query-label").textContent = "Your question";
  history.replaceState(null, "", "/");
  queryInput.focus();
}

async function readEvents(response, onEvent) {
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += decoder.decode(value, { stream: true });
    let end;
    while ((end = buffer.indexOf("\n\n")) >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      let event = "message";
      let data = "";
      for (const line of block.split("\n")) {
        if (line.startsWith("event: ")) event = line.slice(7);
        else if (line.startsWith("data: ")) data += line.slice(6);
      }
      if (data) onEvent(event, JSON.parse(data));
    }
  }
}

// The service is busy (429): count down Retry-After seconds where people can see it, then ask again.
function retryLater(body, headers, attempt) {
  if (attempt >= MAX_RETRIES) {
    setStatus("The server is still busy after several tries; try again in a minute.", "error");
    button.disabled = false;
    return;
  }
  let left = Math.max(1, Math.min(120, parseInt(headers.get("Retry-After"), 10) || 5));
  const tick = () => {
    if (left <= 0) { send(body, attempt + 1); return; }
    setStatus(`The server is busy answering other questions; we will try again in ${left} s.`, "waiting");
    left -= 1;
    retryTimer = setTimeout(tick, 1000);
  };
  tick();
}

async function send(body, attempt = 0) {
  button.disabled = true;
  setStatus(attempt ? "Asking again…" : "Searching the abstracts…");
  let streamed = "";
  let retrying = false;
  try {
    const response = await fetch("/v1/ask", {
      method: "POST", headers: apiHeaders({ "Content-Type": "application/json" }), body: JSON.stringify(body),
    });
    if (response.status === 429) {
      retrying = true;
      retryLater(body, response.headers, attempt);
      return;
    }
    if (!response.ok) {
      let payload = null;
      try { payload = await response.json(); } catch { /* not JSON */ }
      setStatus(describeError(response.status, payload, response.headers), "error");
      return;
    }
    history.replaceState(null, "", `/?q=${encodeURIComponent(body.query)}`);
    actions.querySelector(".permalink").href = `/?q=${encodeURIComponent(body.query)}`;
    await readEvents(response, (name, data) => {
      if (name === "passages") {
        renderPassages(data.passages);
        answerSection.hidden = false;
        setStatus("Writing the answer…");
      } else if (name === "delta") {
        streamed += data.text;
        answerBox.replaceChildren(withMarkerLinks(streamed));
      } else if (name === "done") {
        renderFinal(data);
      } else if (name === "error") {
        setStatus(`The answer failed: ${data.message}`, "error");
      }
    });
  } catch (error) {
    setStatus(`The server could not be reached (${error.message}).`, "error");
  } finally {
    if (!retrying) button.disabled = false;
  }
}

async function ask(event) {
  event.preventDefault();
  clearTimeout(retryTimer);
  await schemaReady;
  const body = requestBody();
  if (!body.query) {
    setStatus("Type a question first.", "error");
    queryInput.focus();
    return;
  }
  const key = keyInput.value.trim();
  if (key) localStorage.setItem(KEY_STORAGE, key);
  archiveCurrentTurn();
  clearCurrentTurn();
  current = { question: body.query, done: false };
  askedText.textContent = body.query;
  await send(body);
}

// A citation link into an earlier turn opens its (folded) passages.
window.addEventListener("hashchange", () => {
  const target = document.getElementById(decodeURIComponent(window.location.hash.slice(1)));
  const folded = target && target.closest("details");
  if (folded && !folded.open) {
    folded.open = true;
    target.scrollIntoView();
  }
});
form.addEventListener("submit", ask);
document.getElementById("new-conversation").addEventListener("click", newConversation);
// Ctrl+Enter (or Cmd+Enter) in the question box asks, as Enter would in a one-line box.
queryInput.addEventListener("keydown", (event) => {
  if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) form.requestSubmit();
});

// A link to a question (/?q=…) asks it on load.
const linked = new URLSearchParams(window.location.search).get("q");
if (linked && linked.trim()) {
  queryInput.value = linked;
  schemaReady.then(() => form.requestSubmit());
}
