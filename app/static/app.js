// The question page: POST /v1/ask with stream: true, read the Server-Sent Events as they arrive, and show the
// answer with its [n] markers linked to the passages. Text from the server is only ever set as textContent.
"use strict";

const form = document.getElementById("ask-form");
const queryInput = document.getElementById("query");
const button = document.getElementById("ask-button");
const statusLine = document.getElementById("status");
const answerSection = document.getElementById("answer-section");
const answerBox = document.getElementById("answer");
const coverageNote = document.getElementById("coverage-note");
const legend = document.getElementById("answer-legend");
const findingsSection = document.getElementById("findings-section");
const findingList = document.getElementById("findings");
const passagesSection = document.getElementById("passages-section");
const passageList = document.getElementById("passages");
const keyRow = document.getElementById("key-row");
const keyInput = document.getElementById("api-key");

const MARKER = /\[(\d{1,2}(?:\s*,\s*\d{1,2})*)\]/g;
const KEY_STORAGE = "aer-rag-api-key";
let passagesByNumber = new Map();

keyInput.value = localStorage.getItem(KEY_STORAGE) || "";
if (keyInput.value) keyRow.hidden = false;

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
    title.textContent = `[${passage.number}] ${doc.title || "Untitled"}`;
    const meta = document.createElement("p");
    meta.className = "meta";
    const parts = [doc.year, doc.authors.join("; ")].filter(Boolean);
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
    passagesByNumber.set(passage.number, { element: text, text: passage.text });
  }
  passagesSection.hidden = passages.length === 0;
}

// Mark, in each cited passage, the sentence that supports the answer.
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
    for (const sentence of supporting) {
      const at = rest.indexOf(sentence);
      if (at < 0) continue;
      fragment.append(rest.slice(0, at));
      const mark = document.createElement("mark");
      mark.textContent = sentence;
      fragment.append(mark);
      rest = rest.slice(at + sentence.length);
    }
    fragment.append(rest);
    passage.element.replaceChildren(fragment);
  }
}

// One card per paper the answer is written from, side by side, so that papers that disagree stay apart.
function renderFindings(findings) {
  findingList.replaceChildren();
  for (const finding of findings) {
    const item = document.createElement("li");
    item.className = finding.supported ? "finding" : "finding unsupported";
    const heading = document.createElement("a");
    heading.href = `#passage-${finding.passage}`;
    heading.className = "finding-paper";
    heading.textContent = `[${finding.passage}] ${finding.title || "Untitled"}${finding.year ? ` (${finding.year})` : ""}`;
    const text = document.createElement("p");
    text.append(withMarkerLinks(finding.text));
    const support = document.createElement("p");
    support.className = "meta";
    support.textContent = finding.supported ? "Supported by its abstract." : "Not verified against its abstract.";
    item.append(heading, text, support);
    findingList.append(item);
  }
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
  renderFindings(done.findings || []);
  legend.hidden = !done.unsupported_sentences.length;
  highlightSupport(done.citations);
  const notes = {
    not_covered: "The indexed abstracts do not cover this question. The closest passages are listed below.",
    partial: "The closest paper may not address this question directly; read the answer with that in mind.",
  };
  coverageNote.hidden = !notes[done.coverage];
  coverageNote.textContent = notes[done.coverage] || "";
  coverageNote.className = `note ${done.coverage}`;
  const seconds = ((done.timings_ms.generate || 0) / 1000).toFixed(1);
  setStatus(done.coverage === "not_covered" ? "Not covered by the indexed abstracts." : `Answered in ${seconds} s.`);
}

function describeError(status, body, headers) {
  const message = body && body.error ? body.error.message : "";
  if (status === 401) {
    keyRow.hidden = false;
    keyInput.focus();
    return "This server needs an API key: enter it above and ask again.";
  }
  if (status === 429) {
    const wait = headers.get("Retry-After");
    return `The server is busy answering other questions; try again${wait ? ` in ${wait} s` : " shortly"}.`;
  }
  if (status === 504) return "The answer took too long and was stopped; try a shorter question.";
  if (status === 400 || status === 413 || status === 415 || status === 422) {
    return `The question could not be sent: ${message || "it is not valid."}`;
  }
  if (status === 503) return "The service is still starting; try again in a moment.";
  return `The server could not answer (${status}${message ? `: ${message}` : ""}).`;
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

async function ask(event) {
  event.preventDefault();
  const body = requestBody();
  if (!body.query) {
    setStatus("Type a question first.", "error");
    queryInput.focus();
    return;
  }
  const headers = { "Content-Type": "application/json" };
  const key = keyInput.value.trim();
  if (key) {
    headers["X-API-Key"] = key;
    localStorage.setItem(KEY_STORAGE, key);
  }
  button.disabled = true;
  setStatus("Searching the abstracts…");
  answerBox.replaceChildren();
  coverageNote.hidden = true;
  legend.hidden = true;
  findingsSection.hidden = true;
  answerSection.hidden = true;
  let streamed = "";
  try {
    const response = await fetch("/v1/ask", { method: "POST", headers, body: JSON.stringify(body) });
    if (!response.ok) {
      let payload = null;
      try { payload = await response.json(); } catch { /* not JSON */ }
      setStatus(describeError(response.status, payload, response.headers), "error");
      return;
    }
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
    button.disabled = false;
  }
}

form.addEventListener("submit", ask);
// Ctrl+Enter (or Cmd+Enter) in the question box asks, as Enter would in a one-line box.
queryInput.addEventListener("keydown", (event) => {
  if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) form.requestSubmit();
});
