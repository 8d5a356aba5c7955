// The memory graph: an entity's neighbourhood as a picture, a time control (asOf) that shows facts begin and
// end, and the facts with validAt and invalidAt, to invalidate (history kept) or delete (erased).

import { callTool } from "../api.js";
import { clear, h } from "../dom.js";
import { graphPicture } from "../graph_picture.js";
import {
  announce, button, confirmAction, field, guarded, heading, input, section, select, table, timeElement, when,
} from "../ui.js";
import { LAYERS } from "./memories.js";

const STATUS = { valid: "holds", invalid: "ended", future: "not yet" };

function link(params) {
  return `#/graph?${new URLSearchParams(params)}`;
}

/** A date field's value (YYYY-MM-DD) as the instant the API takes, or null when blank. */
function isoDate(value) {
  return value ? `${value}T00:00:00Z` : null;
}

export async function render(view, params) {
  const found = h("div", { class: "results", id: "entity-results" });
  const findForm = h("form", { class: "row", role: "search", "aria-label": "Find entities" },
    field("Find entities", input("query", { required: true, placeholder: "Alice, PostgreSQL…" })),
    h("div", {}, h("button", { type: "submit" }, "Find")));
  findForm.addEventListener("submit", (event) => {
    event.preventDefault();
    find(findForm.query.value, found);
  });
  view.append(
    heading("Memory graph"),
    h("p", { class: "lead" }, "Entities are the circles, facts the arrows between them. Move the time control to see the facts that held at that time."),
    section("Find an entity", findForm, found),
  );
  const wanted = params.get("id") || params.get("name");
  const place = h("div", { id: "entity" });
  view.append(place);
  if (wanted) await showEntity(place, params);
  view.append(section("Add a fact", addFactForm(params.get("name") || "")));
}

async function find(query, place) {
  const answer = await guarded(place, () => callTool("graph_search", { query, kind: "entities", threshold: 0, limit: 20 }));
  if (!answer) return;
  clear(place, answer.entities.length
    ? h("ul", { class: "links" }, answer.entities.map((entity) =>
      h("li", {}, h("a", { href: link({ id: entity.entityId, name: entity.name }) }, entity.name),
        ` (${entity.type}, ${entity.layer})`)))
    : h("p", {}, "No entity matches."));
}

async function showEntity(place, params) {
  const ask = params.get("id") ? { entityId: params.get("id") } : { name: params.get("name") };
  const base = { ...ask, depth: 1, includeHistory: true, limit: 200 };
  const answer = await guarded(place, () => callTool("get_memory_object", base));
  if (!answer) return;
  const { entity } = answer;
  // Every moment a fact began or ended, and now: the stops of the time control.
  const moments = [...new Set(answer.facts.flatMap((fact) => [fact.validAt, fact.invalidAt]).filter(Boolean))]
    .map((moment) => new Date(moment).toISOString())
    .sort();
  const now = new Date(answer.asOf).getTime();
  const stops = [...moments.filter((moment) => new Date(moment).getTime() < now), null];
  const picture = h("div", { class: "picture", id: "graph-picture" });
  const facts = h("div", { id: "facts" });
  const action = h("div", { id: "fact-action" });
  const slider = h("input", { type: "range", min: 0, max: stops.length - 1, step: 1, value: stops.length - 1, id: "as-of" });
  const shown = h("output", { for: "as-of", id: "as-of-value" }, "now");
  const draw = async () => {
    const moment = stops[Number(slider.value)];
    shown.textContent = moment ? when(moment) : "now";
    slider.setAttribute("aria-valuetext", moment ? when(moment) : "now");
    const at = moment ? await guarded(picture, () => callTool("get_memory_object", { ...base, asOf: moment })) : answer;
    if (!at) return;
    const holding = at.facts.filter((fact) => fact.status === "valid");
    // Neighbours named by the facts drawn (they bring their types); the others were linked at another time.
    const drawnIds = new Set(holding.map((fact) => fact.factId));
    const near = at.neighbours.filter((neighbour) => neighbour.via.some((id) => drawnIds.has(id)));
    clear(picture, graphPicture(entity, holding, near, (node) => link({ id: node.id, name: node.name })));
    clear(facts, factTable(at.facts, action, () => showEntity(place, params)));
  };
  slider.addEventListener("input", draw);
  clear(place,
    section(`${entity.name}`,
      h("p", { class: "meta" }, h("span", { class: "badge" }, entity.layer), ` ${entity.type}`,
        entity.aliases.length ? ` · also known as ${entity.aliases.join(", ")}` : ""),
      entity.summary ? h("p", {}, entity.summary) : null,
      h("div", { class: "time" },
        h("label", { for: "as-of" }, "As of"), slider, shown,
        h("small", {}, `${stops.length - 1} earlier ${stops.length === 2 ? "moment" : "moments"} when a fact began or ended`)),
      picture,
      facts,
      action,
      h("div", { class: "actions" }, button(`Delete ${entity.name}…`, () => deleteObject({ entityId: entity.entityId }, entity.name), { class: "danger" }))));
  await draw();
}

function factTable(facts, action, reload) {
  if (!facts.length) return h("p", {}, "No facts.");
  return table(
    ["Fact", "Relation", "Valid from", "Until", "At this time", "Actions"],
    facts.map((fact) => h("tr", { "data-fact-id": fact.factId, "data-status": fact.status },
      h("td", {}, fact.text),
      h("td", {}, `${fact.subject} `, h("code", {}, fact.predicate), ` ${fact.object}`),
      h("td", {}, timeElement(fact.validAt)),
      h("td", {}, timeElement(fact.invalidAt)),
      h("td", {}, STATUS[fact.status] || fact.status),
      h("td", {}, h("div", { class: "actions" },
        fact.invalidAt ? null : button("Invalidate", () => invalidateForm(fact, action, reload), { "aria-label": `Invalidate: ${fact.text}` }),
        button("Delete", () => deleteObject({ factId: fact.factId }, fact.text, reload), { class: "danger", "aria-label": `Delete: ${fact.text}` }))))),
    "Facts about this entity, past and present",
  );
}

function invalidateForm(fact, place, reload) {
  const result = h("div");
  const form = h("form", { class: "stack", "aria-label": "Invalidate a fact" },
    h("p", {}, `“${fact.text}” stopped being true. It stays in the history.`),
    h("div", { class: "row" },
      field("Ended on", input("invalidAt", { type: "date" }), "blank: now"),
      field("Why", input("reason", { placeholder: "Alice left Acme" }))),
    h("div", { class: "actions" }, h("button", { type: "submit" }, "Invalidate"), button("Cancel", () => clear(place))),
    result);
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const body = { factId: fact.factId };
    if (form.invalidAt.value) body.invalidAt = isoDate(form.invalidAt.value);
    if (form.reason.value) body.reason = form.reason.value;
    const answer = await guarded(result, () => callTool("invalidate_memory_link", body));
    if (!answer) return;
    announce(answer.message);
    await reload();
  });
  clear(place, form);
  form.querySelector("input").focus();
}

async function deleteObject(target, label, reload) {
  const place = document.getElementById("fact-action");
  const preview = await guarded(place, () => callTool("delete_memory_object", target));
  if (!preview) return;
  const sure = await confirmAction({ title: `Delete “${label}”?`, message: preview.message });
  if (!sure) {
    announce("Nothing deleted.");
    return;
  }
  const answer = await guarded(place, () => callTool("delete_memory_object", { ...target, confirmationToken: preview.confirmationToken }));
  if (!answer) return;
  announce(answer.message);
  if (reload) await reload();
  else window.location.hash = "#/graph";
}

function addFactForm(subject) {
  const result = h("div");
  const form = h("form", { class: "stack", id: "fact-add", "aria-label": "Add a fact" },
    h("div", { class: "row" },
      field("Subject", input("subject", { required: true, value: subject })),
      field("Relation", input("predicate", { required: true, placeholder: "works_at" })),
      field("Object", input("object", { required: true }))),
    h("div", { class: "row" },
      field("True from", input("validAt", { type: "date" }), "blank: now"),
      field("Layer", select("layer", LAYERS.map((layer) => [layer, layer]), "user")),
      h("div", { class: "field check" }, h("input", { type: "checkbox", name: "exclusive", id: "fact-exclusive" }),
        h("label", { for: "fact-exclusive" }, "Exclusive: ends the one held until now"))),
    h("div", {}, h("button", { type: "submit" }, "Add fact")),
    result);
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const body = { subject: form.subject.value, predicate: form.predicate.value, object: form.object.value, layer: form.layer.value };
    if (form.validAt.value) body.validAt = isoDate(form.validAt.value);
    if (form.exclusive.checked) body.exclusive = true;
    const answer = await guarded(result, () => callTool("add_memory_link", body));
    if (!answer) return;
    announce(answer.message);
    window.location.hash = link({ id: answer.subject.entityId, name: answer.subject.name, added: answer.factId });
  });
  return form;
}
