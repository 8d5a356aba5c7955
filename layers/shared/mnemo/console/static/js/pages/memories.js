// Memories: the newest memories of every layer the identity can read (the page opens on them), search with each
// result's calibrated score and its lexical and vector parts, browse one layer, open a memory's history (added,
// deduplicated, extracted, superseded, deleted), add, delete. An extracted memory says so, with the strategy, the
// model and the turns it came from; a superseded one says what replaced it.

import { callTool } from "../api.js";
import { append, clear, h } from "../dom.js";
import { LAYERS, readableLayers } from "../identity.js";
import {
  announce, button, checkboxes, checkedValues, confirmAction, field, guarded, heading, input, score, section,
  select, tags, timeElement, turnLinks,
} from "../ui.js";

export { LAYERS };

// Memories a page of the newest shows (and memory_list is asked for, per layer).
const PAGE = 20;

const RETRIEVAL = {
  hybrid: "lexical (BM25) and vector similarity, calibrated together",
  lexical: "lexical (BM25) only: embeddings were unavailable",
};

function splitTags(text) {
  return text.split(",").map((tag) => tag.trim()).filter(Boolean);
}

export async function render(view, params) {
  const results = h("div", { class: "results", id: "memory-results" });
  const recent = h("div", { class: "results", id: "memory-recent" });
  const searchForm = h(
    "form",
    { class: "stack", id: "memory-search", role: "search", "aria-label": "Search memories" },
    h("div", { class: "row" },
      field("Query", input("query", { required: true, value: params.get("q") || "", placeholder: "What do agents remember about…" })),
      field("Minimum score", input("threshold", { type: "number", min: 0, max: 1, step: 0.05, value: 0 }), "0 lists every match"),
      field("Most results", input("limit", { type: "number", min: 1, max: 100, value: 20 })),
      field("Tags", input("tags", { placeholder: "any of: a, b" }))),
    checkboxes("Layers (none ticked: every layer you can read)", "layer", LAYERS, params.getAll("layer")),
    h("div", { class: "field check" },
      h("input", { type: "checkbox", id: "memory-superseded", name: "superseded" }),
      h("label", { for: "memory-superseded" }, "Also memories that a newer extracted memory replaced (superseded)")),
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
    add(addForm, added, searchForm, results, recent);
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
    h("p", { class: "lead" }, "What agents remember, in the layers your identity can read, newest first. Search, browse a layer, open a memory's history, add one, or delete one that is wrong."),
    section("Search", searchForm, results),
    section("Newest memories", recent),
    section("Browse", browseForm, listed),
    section("Add a memory", addForm, added),
  );
  await Promise.all([
    showNewest(recent),
    params.get("browse") ? browse(browseForm.layer.value, listed) : null,
    searchForm.query.value ? search(searchForm, results) : null,
  ]);
}

async function search(form, place) {
  const layers = checkedValues(form, "layer");
  const body = {
    query: form.query.value,
    threshold: Number(form.threshold.value || 0),
    limit: Number(form.limit.value || 20),
  };
  if (layers.length) body.layers = layers;
  if (form.superseded.checked) body.includeSuperseded = true;
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

/** Where a memory came from, for its card: typed (manual, by a tool call), synced, or extracted by a strategy. */
function origin(memory) {
  const metadata = memory.metadata || {};
  const source = metadata.source || "manual";
  if (source !== "extraction") return { source, badge: null, details: null };
  const provenance = metadata.provenance || {};
  const strategy = provenance.strategy || metadata.strategy || "a strategy";
  return {
    source,
    badge: h("span", { class: "badge extracted", "data-strategy": strategy }, `extracted by ${strategy}`),
    details: h("div", { class: "provenance" },
      h("p", { class: "meta" },
        h("span", {}, (provenance.messageIds || []).length
          ? "Extracted from these turns, not typed by anyone:" : "Extracted from conversation turns, not typed by anyone"),
        provenance.model ? h("span", {}, "model ", h("code", {}, provenance.model)) : null,
        provenance.extractedAt ? h("span", {}, "at ", timeElement(provenance.extractedAt)) : null),
      turnLinks(provenance.messageIds, `Turns memory ${memory.memoryId} was extracted from`)),
  };
}

/** Whether a newer memory replaced this one (it stays, marked), or this one replaced an older one. */
function supersession(memory) {
  return h("p", { class: "meta" },
    memory.supersededBy
      ? h("span", { class: "superseded" }, "Replaced by memory ", h("code", {}, memory.supersededBy),
        memory.supersededAt ? [" at ", timeElement(memory.supersededAt)] : null)
      : null,
    memory.supersedes ? h("span", {}, "Replaces memory ", h("code", {}, memory.supersedes)) : null);
}

/** One memory as a card: a search result (with its score and the score's parts) or a listed one (without). */
function card(memory, retrieval) {
  const item = h("li", { class: memory.supersededBy ? "card superseded" : "card", "data-memory-id": memory.memoryId });
  const { source, badge, details } = origin(memory);
  const remove = button("Delete", () => removeMemory(memory, item), { class: "danger", "aria-label": `Delete memory: ${memory.content.slice(0, 60)}` });
  const history = h("div", { class: "history", "aria-live": "polite" });
  const showHistory = button("History", () => showChanges(memory.memoryId, history), { "aria-label": `History of memory: ${memory.content.slice(0, 60)}` });
  const scored = typeof memory.score === "number";
  append(item, [
    h("p", { class: "content" }, memory.content),
    h("p", { class: "meta" },
      h("span", { class: "badge" }, memory.layer),
      badge,
      memory.supersededBy ? h("span", { class: "badge superseded-badge" }, "superseded") : null,
      scored ? score(memory.score) : null,
      scored ? h("span", {}, `from ${foundBy(memory, retrieval)}`) : null,
      scored ? h("span", { class: "parts", "aria-label": "Parts of the score" }, part("lexical", memory.lexicalScore), " · ", part("vector", memory.vectorScore)) : null,
      scored ? null : h("span", {}, "added ", timeElement(memory.createdAt)),
      badge ? null : h("span", {}, `source: ${source}`)),
    details,
    memory.supersededBy || memory.supersedes ? supersession(memory) : null,
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
  ]);
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
  // The memory may be shown twice (a search result and among the newest): it goes from every list.
  for (const shown of document.querySelectorAll(".card[data-memory-id]")) {
    if (shown.dataset.memoryId === memory.memoryId) shown.remove();
  }
  item.remove();
  announce(`Deleted memory ${memory.memoryId}.`);
}

async function add(form, place, searchForm, results, recent) {
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
  await Promise.all([showNewest(recent), searchForm.query.value ? search(searchForm, results) : null]);
}

const EVENTS = {
  ADD: "added",
  DEDUPE: "added again, kept once (deduplicated)",
  DELETE: "deleted",
  SYNC_ADD: "added by knowledge sync",
  SYNC_UPDATE: "updated by knowledge sync",
  ORPHAN: "its knowledge item was removed",
  EXTRACT: "extracted from conversation turns",
  EXTEND: "stated again in later turns (its sources extended)",
  SUPERSEDE: "superseded by a newer memory (kept, no longer searched)",
};

/** A memory's history (memory_history), oldest first, every page of it. */
async function showChanges(memoryId, place) {
  const changes = [];
  let versions = [];
  let cursor = null;
  do {
    const body = cursor ? { memoryId, cursor } : { memoryId };
    const answer = await guarded(place, () => callTool("memory_history", body));
    if (!answer) return;
    changes.push(...answer.changes);
    if ((answer.versions || []).length) versions = answer.versions;
    cursor = answer.hasMore ? answer.nextCursor : null;
  } while (cursor);
  clear(place,
    h("h3", {}, "History"),
    h("ol", { class: "changes", "aria-label": `History of memory ${memoryId}` },
      changes.map((change) => h("li", { "data-event": change.event },
        timeElement(change.at), " ", h("strong", {}, EVENTS[change.event] || change.event),
        change.actor ? ` by ${change.actor}` : null,
        change.supersededBy ? [": by memory ", h("code", {}, change.supersededBy)] : null,
        turnLinks(change.messageIds, `Turns of this change (${change.event})`)))),
    versions.length ? versionList(memoryId, versions) : null);
  announce(`History of memory ${memoryId}: ${changes.length} ${changes.length === 1 ? "change" : "changes"}.`);
}

/** Every version of an extracted fact, oldest first: what it said, when, and which version replaced it. */
function versionList(memoryId, versions) {
  return [
    h("h3", {}, "Versions of this fact"),
    h("ol", { class: "changes versions", "aria-label": `Versions of the fact of memory ${memoryId}, oldest first` },
      versions.map((version) => h("li", { "data-version": version.memoryId, "aria-current": version.memoryId === memoryId ? "true" : null },
        timeElement(version.createdAt), " ", h("q", {}, version.content), " ", h("code", {}, version.memoryId),
        version.memoryId === memoryId ? " (this one)" : null,
        version.supersededBy ? h("span", { class: "superseded" }, " replaced by ", h("code", {}, version.supersededBy)) : " (current)"))),
  ];
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

/**
 * The newest memories of the readable layers, merged newest first: memory_list per layer, a page at a time, and
 * the next page of a layer asked for only when its memories so far are shown. More shows the next 20.
 */
class Newest {
  constructor(layers) {
    this.sources = layers.map((layer) => ({ layer, buffer: [], cursor: null, done: false }));
    this.refused = [];
  }

  async fill(source) {
    if (source.buffer.length || source.done) return;
    const body = { layer: source.layer, limit: PAGE };
    if (source.cursor) body.cursor = source.cursor;
    let answer;
    try {
      answer = await callTool("memory_list", body);
    } catch (error) {
      // A layer whose ids the identity lacks (a bearer token's claims decide which) is not the identity's.
      if (error.code !== "INVALID_INPUT" || !error.details.missingIds) throw error;
      source.done = true;
      this.refused.push(source.layer);
      return;
    }
    source.buffer.push(...answer.memories);
    source.cursor = answer.hasMore ? answer.nextCursor : null;
    source.done = !source.cursor || !answer.memories.length;
  }

  async next(count) {
    const shown = [];
    while (shown.length < count) {
      await Promise.all(this.sources.map((source) => this.fill(source)));
      const live = this.sources.filter((source) => source.buffer.length);
      if (!live.length) break;
      const newest = live.reduce((best, source) => (newer(source.buffer[0], best.buffer[0]) ? source : best));
      shown.push(newest.buffer.shift());
    }
    return shown;
  }

  get hasMore() {
    return this.sources.some((source) => source.buffer.length || !source.done);
  }

  get layers() {
    return this.sources.map((source) => source.layer).filter((layer) => !this.refused.includes(layer));
  }
}

/** Whether memory a was added after b (then by id, as memory_list orders one layer). */
function newer(a, b) {
  const [at, bt] = [Date.parse(a.createdAt), Date.parse(b.createdAt)];
  if (at !== bt) return at > bt;
  return `${a.createdAt}|${a.memoryId}` > `${b.createdAt}|${b.memoryId}`;
}

async function showNewest(place) {
  const layers = readableLayers() || LAYERS;
  const newest = new Newest(layers);
  const list = h("ol", { class: "cards", "aria-label": "Newest memories" });
  const summary = h("p", { class: "summary" });
  const status = h("div");
  clear(place, summary, status);
  const more = async () => {
    const shown = await guarded(status, () => newest.next(PAGE));
    if (!shown) return;
    list.append(...shown.map((memory) => card(memory)));
    const older = place.querySelector("#memory-recent-more");
    if (older) older.remove();
    const readable = newest.layers;
    clear(summary, list.children.length
      ? `Newest first across the layers you can read: ${readable.join(", ") || "none"}.`
      : `No memory yet in the layers you can read (${readable.join(", ") || "none"}). Add one below, or let extraction learn from your agents' conversations.`);
    if (list.children.length && !list.isConnected) place.insertBefore(list, status);
    if (newest.hasMore) place.append(button("Older memories", more, { id: "memory-recent-more" }));
  };
  await more();
}
