// The question page's helpers for papers: how a paper is named (a paper without a title by its first words and
// date), copying text, citations (BibTeX and RIS from /v1/documents), related papers, and errors in plain words.
// Loaded before app.js. Text from the server is only ever set as textContent.
"use strict";

const KEY_STORAGE = "aer-rag-api-key";
const MONTH_NAMES = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];

function apiHeaders(extra = {}) {
  const headers = { ...extra };
  const key = document.getElementById("api-key").value.trim();
  if (key) headers["X-API-Key"] = key;
  return headers;
}

function firstWords(text, count = 8) {
  const words = (text || "").split(/\s+/).filter(Boolean);
  const shown = words.slice(0, count).join(" ").replace(/[,;:.]$/, "");
  return words.length > count ? `${shown} …` : shown;
}

// "Dec 1998" from "1998-12", "1998" from "1998"; "" when unknown.
function dateLabel(date, year) {
  const match = /^(\d{4})-(\d{2})/.exec(date || "");
  if (match && Number(match[2]) >= 1 && Number(match[2]) <= 12) return `${MONTH_NAMES[Number(match[2]) - 1]} ${match[1]}`;
  return year ? String(year) : (date || "");
}

// A paper's name: its title, or the first words of its text in brackets; never "Untitled".
function paperLabel(title, text) {
  if (title && title.trim()) return title.trim();
  const words = firstWords(text);
  return words ? `[${words}]` : "[No title]";
}

function documentUrl(docId, suffix = "") {
  return `/v1/documents/${encodeURIComponent(docId)}${suffix}`;
}

// Copy text: the Clipboard API where the browser allows it, else a selected off-screen text field. The text is
// also kept in the button's data-copied (and the off-screen field), so it can be checked and copied by hand.
async function copyText(text, button) {
  button.dataset.copied = text;
  const field = document.getElementById("copied-text");
  field.value = text;
  let copied = false;
  try {
    await Promise.race([
      navigator.clipboard.writeText(text),
      new Promise((_, reject) => setTimeout(() => reject(new Error("timeout")), 1000)),
    ]);
    copied = true;
  } catch {
    field.select();
    try { copied = document.execCommand("copy"); } catch { copied = false; }
  }
  flash(button, copied ? "Copied" : "Copy failed: select the text and copy it");
  return copied;
}

function flash(button, message) {
  if (!button.dataset.label) button.dataset.label = button.textContent;
  button.textContent = message;
  clearTimeout(button.flashTimer);
  button.flashTimer = setTimeout(() => { button.textContent = button.dataset.label; }, 2000);
}

async function fetchText(url, options = {}) {
  const response = await fetch(url, { ...options, headers: apiHeaders(options.headers || {}) });
  if (!response.ok) {
    let payload = null;
    try { payload = await response.json(); } catch { /* not JSON */ }
    throw new Error(describeError(response.status, payload, response.headers));
  }
  return response.text();
}

function citedIds(button) {
  return (button.closest("section, li.turn").dataset.docIds || "").split("\n").filter(Boolean);
}

async function copyBibtex(button) {
  try {
    await copyText(await fetchText(documentUrl(button.dataset.docId, "?format=bibtex")), button);
  } catch (error) { flash(button, error.message); }
}

async function exportCited(button, format) {
  const ids = citedIds(button);
  if (!ids.length) { flash(button, "The answer cites no paper."); return null; }
  return fetchText("/v1/documents/export", {
    method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ doc_ids: ids, format }),
  });
}

async function copyAllBibtex(button) {
  try {
    const text = await exportCited(button, "bibtex");
    if (text !== null) await copyText(text, button);
  } catch (error) { flash(button, error.message); }
}

async function download(button) {
  const format = button.dataset.format;
  try {
    const text = await exportCited(button, format);
    if (text === null) return;
    const link = document.createElement("a");
    link.href = URL.createObjectURL(new Blob([text], { type: "text/plain" }));
    link.download = `aer-citations.${format}`;
    document.body.append(link);
    link.click();
    link.remove();
    setTimeout(() => URL.revokeObjectURL(link.href), 10000);
  } catch (error) { flash(button, error.message); }
}

// The "Related" toggle of a finding: the nearest papers by their embeddings, fetched once.
async function toggleRelated(button) {
  const list = document.getElementById(button.getAttribute("aria-controls"));
  const open = button.getAttribute("aria-expanded") !== "true";
  button.setAttribute("aria-expanded", String(open));
  list.hidden = !open;
  if (!open || list.dataset.loaded) return;
  list.replaceChildren(listItem("Finding related papers…"));
  try {
    const body = JSON.parse(await fetchText(documentUrl(button.dataset.docId, "/related?k=5")));
    list.replaceChildren(...body.related.map((paper) => relatedItem(paper)));
    if (!body.related.length) list.replaceChildren(listItem("No related paper found."));
    list.dataset.loaded = "true";
  } catch (error) {
    list.replaceChildren(listItem(error.message));
  }
}

function listItem(text) {
  const item = document.createElement("li");
  item.textContent = text;
  return item;
}

function relatedItem(paper) {
  const doc = paper.document;
  const item = document.createElement("li");
  const label = paper.display_title || paperLabel(doc.title, "");
  const when = dateLabel(doc.date, doc.year);
  if (doc.doi) {
    const link = document.createElement("a");
    link.href = `https://doi.org/${doc.doi}`;
    link.rel = "noopener noreferrer";
    link.textContent = label;
    item.append(link);
  } else {
    item.append(label);
  }
  if (when) item.append(` (${when})`);
  return item;
}

document.addEventListener("click", (event) => {
  const button = event.target.closest("button[data-action]");
  if (!button) return;
  const action = button.dataset.action;
  if (action === "copy-answer") copyText(button.closest("section, li.turn").dataset.answer || "", button);
  else if (action === "copy-bibtex") copyBibtex(button);
  else if (action === "bibtex-all") copyAllBibtex(button);
  else if (action === "download") download(button);
  else if (action === "related") toggleRelated(button);
});

// The API's 422 details as sentences people understand.
function describeProblem(detail) {
  const field = String(detail.field || "");
  const problem = String(detail.problem || "");
  if (/year_min/.test(problem) && /after year_max/.test(problem)) return "The start year is after the end year.";
  if (/year_(min|max)/.test(field)) return "Years must be whole numbers between 1800 and 2100.";
  if (/jel_prefix/.test(field)) return "The JEL code must be a letter, optionally followed by one or two digits (e.g. J or J3).";
  if (/history/.test(field)) return "The conversation is too long to send; start a new conversation.";
  if (/query/.test(field)) {
    if (/at most|too long/i.test(problem)) return "The question is too long: at most 1,000 characters.";
    return "Type a question first.";
  }
  return problem ? `${problem}.` : "Something in the question could not be read.";
}

function describeError(status, body, headers) {
  const error = body && body.error ? body.error : {};
  const message = error.message || "";
  if (status === 401) {
    document.getElementById("key-row").hidden = false;
    document.getElementById("api-key").focus();
    return "This server needs an API key: enter it above and ask again.";
  }
  if (status === 404) return "That paper is no longer in the index.";
  if (status === 429) {
    const wait = headers.get("Retry-After");
    return `The server is busy answering other questions; try again${wait ? ` in ${wait} s` : " shortly"}.`;
  }
  if (status === 504) return "The answer took too long and was stopped; try a shorter question.";
  if (status === 422 && Array.isArray(error.details) && error.details.length) {
    const sentences = [...new Set(error.details.map(describeProblem))];
    return `The question could not be sent: ${sentences.join(" ")}`;
  }
  if (status === 400 || status === 413 || status === 415 || status === 422) {
    return `The question could not be sent: ${message || "it is not valid."}`;
  }
  if (status === 503) return "The service is still starting; try again in a moment.";
  return `The server could not answer (${status}${message ? `: ${message}` : ""}).`;
}
