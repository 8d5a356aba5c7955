// Memories: browse a layer, search with each result's calibrated score and its lexical and vector parts, open one
// to see its history (added, deduplicated, deleted), add, delete.

import { callTool } from "../api.js";
import { clear, h } from "../dom.js";
import {
  announce, button, checkboxes, checkedValues, confirmAction, field, guarded, heading, input, score, section,
  select, tags, timeElement,
} from "../ui.js";

export const LAYERS = ["agent", "user", "session", "project", "team", "org", "company"];

const RETRIEVAL = {
  hybrid: "lexical (BM25) and vector similarity, calibrated together",
  lexical: "lexical (BM25) only: embeddings were unavailable",
};

function splitTags(text) {
  return text.split(",").map((tag) => tag.trim()).filter(Boolean);
}

export async function render(view, params) {
  const results = h("div", { class: "results", id: "memory-results" });
  const searchForm = h(
    "form",
    { class: "stack", id: "memory-search", role: "search", "aria-label": "Search memories" },
    h("div", { class: "row" },
      field("Query", input("query", { required: true, value: params.get("q") || "", placeholder: "What do agents remember about…" })),
      field("Minimum score", input("threshold", { type: "number", min: 0, max: 1, step: 0.05, value: 0 }), "0 lists every match"),
      field("Most results", input("limit", { type: "number", min: 1, max: 100, value: 20 })),
      field("Tags", input("tags", { placeholder: "any of: a, b" }))),
    checkboxes("Layers (none ticked: every layer you can read)", "layer", LAYERS, params.getAll("layer")),
    h("div", {}, h("button", { type: "submit" }, "Search")),
  );
  searchForm.addEventListener("submit", (event) => {
    event.preventDefault();
    search(searchForm, results);
  });

  const added = h("div", { class: "results", id: "memory-added" });
  const addForm = h(
    "form",
    { class: "stack", id: "memory-add", "aria-label": "Add a memory" },
    field("Content", h("textarea", { name: "content", rows: 3, required: true, maxlength: 8000 })),
    h("div", { class: "row" },
      field("Layer", select("layer", LAYERS.map((layer) => [layer, layer]), "user")),
      field("Tags", input("tags", { placeholder: "comma, separated" }))),
    h("div", {}, h("button", { type: "submit" }, "Add memory")),
  );
  addForm.addEventListener("submit", (event) => {
    event.preventDefault();
    add(addForm, added, searchForm, results);
  });

  const listed = h("div", { class: "results", id: "memory-list" });
  const browseForm = h(
    "form",
    { class: "row", id: "memory-browse", "aria-label": "Browse memories" },
    field("Browse", select("layer", LAYERS.map((layer) => [layer, layer]), params.get("browse") || "user"), "newest first"),
    h("div", {}, h("button", { type: "submit" }, "Show memories")),
  );
  browseForm.addEventListener("submit", (event) => {
    event.preventDefault();
    browse(browseForm.layer.value, listed);
  });

  view.append(
    heading("Memories"),
    h("p", { class: "lead" }, "What agents remember, in the layers your identity can read. Browse a layer, search, open a memory's history, add one, or delete one that is wrong."),
    section("Search", searchForm, results),
    section("Browse", browseForm, listed),
    section("Add a memory", addForm, added),
  );
  if (params.get("browse")) await browse(browseForm.layer.value, listed);
  if (searchForm.query.value) await search(searchForm, results);
}

async function search(form, place) {
  const layers = checkedValues(form, "layer");
  const body = {
    query: form.query.value,
    threshold: Number(form.threshold.value || 0),
    limit: Number(form.limit.value || 20),
  };
  if (layers.length) body.layers = layers;
  const wanted = splitTags(form.tags.value);
  if (wanted.length) body.tags = wanted;
  const answer = await guarded(place, () => callTool("memory_search", body));
  if (!answer) return;
  clear(
    place,
    h("p", { class: "summary" },
      `${answer.totalCount} ${answer.totalCount === 1 ? "memory" : "memories"} found in ${answer.searchedLayers.join(", ") || "no layer"}. `,
      h("span", { class: "retrieval" }, `Ranked by ${RETRIEVAL[answer.retrieval] || answer.retrieval}.`)),
    answer.results.length
      ? h("ol", { class: "cards", "aria-label": "Search results" }, answer.results.map((memory) => card(memory, answer.retrieval)))
      : h("p", {}, "No memory matches. Lower the minimum score or tick more layers."),
  );
}

/** Which searches found a result, from the parts of its score (each null when that search missed it). */
function foundBy(memory, retrieval) {
  if (memory.vectorScore === undefined && memory.lexicalScore === undefined) {
    return retrieval === "lexical" ? "lexical" : "lexical + vector";
  }
  const sides = [];
  if (memory.lexicalScore !== null) sides.push("lexical");
  if (memory.vectorScore !== null) sides.push("vector");
  return sides.join(" + ") || "neither";
}

function part(name, value) {
  return h("span", { class: "part", "data-part": name },
    `${name} `, value === null || value === undefined ? h("span", { class: "value", title: `the ${name} search did not find it` }, "—") : h("span", { class: "value" }, value.toFixed(2)));
}

/** One memory as a card: a search result (with its score and the score's parts) or a browsed one (without). */
function card(memory, retrieval) {
  const item = h("li", { class: "card", "data-memory-id": memory.memoryId });
  const source = (memory.metadata && memory.metadata.source) || "manual";
  const remove = button("Delete", () => removeMemory(memory, item), { class: "danger", "aria-label": `Delete memory: ${memory.content.slice(0, 60)}` });
  const history = h("div", { class: "history", "aria-live": "polite" });
  const showHistory = button("History", () => showChanges(memory.memoryId, history), { "aria-label": `History of memory: ${memory.content.slice(0, 60)}` });
  const scored = typeof memory.score === "number";
  item.append(
    h("p", { class: "content" }, memory.content),
    h("p", { class: "meta" },
      h("span", { class: "badge" }, memory.layer),
      scored ? score(memory.score) : null,
      scored ? h("span", {}, `from ${foundBy(memory, retrieval)}`) : null,
      scored ? h("span", { class: "parts", "aria-label": "Parts of the score" }, part("lexical", memory.lexicalScore), " · ", part("vector", memory.vectorScore)) : null,
      scored ? null : h("span", {}, "added ", timeElement(memory.createdAt)),
      h("span", {}, `source: ${source}`)),
    tags(memory.tags),
    h("details", {},
      h("summary", {}, "Details"),
      h("dl", { class: "pairs" },
        h("dt", {}, "Memory id"), h("dd", {}, h("code", {}, memory.memoryId)),
        h("dt", {}, "Added"), h("dd", {}, timeElement(memory.createdAt)),
        h("dt", {}, "Happened"), h("dd", {}, timeElement(memory.occurredAt)),
        h("dt", {}, "Metadata"), h("dd", {}, h("pre", {}, JSON.stringify(memory.metadata || {}, null, 2))))),
    history,
    // Knowledge sync owns the memories that mirror knowledge items: the API refuses to delete them.
    h("div", { class: "actions" }, showHistory, source === "knowledge_sync"
      ? h("small", {}, "Mirrors a knowledge item: change the item's file, and sync updates this memory.")
      : remove),
  );
  return item;
}

async function removeMemory(memory, item) {
  const sure = await confirmAction({
    title: "Delete this memory?",
    message: `“${memory.content}” will no longer be found by agents. The deletion is kept in the memory's history.`,
  });
  if (!sure) {
    announce("Nothing deleted.");
    return;
  }
  const place = h("div");
  item.append(place);
  const answer = await guarded(place, () => callTool("memory_delete", { memoryId: memory.memoryId }));
  if (!answer) return;
  item.remove();
  announce(`Deleted memory ${memory.memoryId}.`);
}

async function add(form, place, searchForm, results) {
  const body = { content: form.content.value, layer: form.layer.value };
  const given = splitTags(form.tags.value);
  if (given.length) body.tags = given;
  const answer = await guarded(place, () => callTool("memory_add", body));
  if (!answer) return;
  const text = answer.deduplicated
    ? `Already remembered: this repeats memory ${answer.memoryId} in ${answer.layer}, which is kept (deduplicated).`
    : `Stored as ${answer.memoryId} in ${answer.layer}.`;
  clear(place, h("p", { class: "ok" }, text));
  announce(text);
  form.content.value = "";
  if (searchForm.query.value) await search(searchForm, results);
}

const EVENTS = {
  ADD: "added",
  DEDUPE: "added again, kept once (deduplicated)",
  DELETE: "deleted",
  SYNC_ADD: "added by knowledge sync",
  SYNC_UPDATE: "updated by knowledge sync",
  ORPHAN: "its knowledge item was removed",
};

/** A memory's history (memory_history), oldest first, every page of it. */
async function showChanges(memoryId, place) {
  const changes = [];
  let cursor = null;
  do {
    const body = cursor ? { memoryId, cursor } : { memoryId };
    const answer = await guarded(place, () => callTool("memory_history", body));
    if (!answer) return;
    changes.push(...answer.changes);
    cursor = answer.hasMore ? answer.nextCursor : null;
  } while (cursor);
  clear(place,
    h("h3", {}, "History"),
    h("ol", { class: "changes", "aria-label": `History of memory ${memoryId}` },
      changes.map((change) => h("li", { "data-event": change.event },
        timeElement(change.at), " ", h("strong", {}, EVENTS[change.event] || change.event),
        change.actor ? ` by ${change.actor}` : null))));
  announce(`History of memory ${memoryId}: ${changes.length} ${changes.length === 1 ? "change" : "changes"}.`);
}

/** One layer's memories, newest first (memory_list), a page at a time: More appends the next page. */
async function browse(layer, place, cursor = null) {
  const body = { layer, limit: 20 };
  if (cursor) body.cursor = cursor;
  const status = h("div");
  if (!cursor) clear(place);
  place.append(status);
  const answer = await guarded(status, () => callTool("memory_list", body));
  if (!answer) return;
  status.remove();
  let list = place.querySelector("ol.cards");
  if (!list) {
    place.append(h("p", { class: "summary" }, `Memories of the ${answer.layer} layer, newest first.`));
    list = h("ol", { class: "cards", "aria-label": "Browsed memories" });
    place.append(list);
  }
  list.append(...answer.memories.map((memory) => card(memory)));
  const more = place.querySelector("#memory-list-more");
  if (more) more.remove();
  if (!list.children.length) place.append(h("p", {}, `No memory in the ${answer.layer} layer.`));
  if (answer.hasMore) {
    place.append(button("More", () => browse(layer, place, answer.nextCursor), { id: "memory-list-more" }));
  }
}
