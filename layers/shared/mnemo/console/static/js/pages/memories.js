// Memories: search by layer with each result's calibrated score and where it came from, open one, add, delete.

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

  view.append(
    heading("Memories"),
    h("p", { class: "lead" }, "What agents remember, in the layers your identity can read. Search, open a memory, add one, or delete one that is wrong."),
    section("Search", searchForm, results),
    section("Add a memory", addForm, added),
  );
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

function card(memory, retrieval) {
  const item = h("li", { class: "card", "data-memory-id": memory.memoryId });
  const source = (memory.metadata && memory.metadata.source) || "manual";
  const remove = button("Delete", () => removeMemory(memory, item), { class: "danger", "aria-label": `Delete memory: ${memory.content.slice(0, 60)}` });
  item.append(
    h("p", { class: "content" }, memory.content),
    h("p", { class: "meta" },
      h("span", { class: "badge" }, memory.layer),
      score(memory.score),
      h("span", {}, `from ${retrieval === "lexical" ? "lexical" : "lexical + vector"}`),
      h("span", {}, `source: ${source}`)),
    tags(memory.tags),
    h("details", {},
      h("summary", {}, "Details"),
      h("dl", { class: "pairs" },
        h("dt", {}, "Memory id"), h("dd", {}, h("code", {}, memory.memoryId)),
        h("dt", {}, "Added"), h("dd", {}, timeElement(memory.createdAt)),
        h("dt", {}, "Happened"), h("dd", {}, timeElement(memory.occurredAt)),
        h("dt", {}, "Metadata"), h("dd", {}, h("pre", {}, JSON.stringify(memory.metadata || {}, null, 2))))),
    // Knowledge sync owns the memories that mirror knowledge items: the API refuses to delete them.
    h("div", { class: "actions" }, source === "knowledge_sync"
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
