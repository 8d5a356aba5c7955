// Pinned blocks: the pinned context in order with its budget gauge, every block to pin, unpin or edit, and
// the budget error told so that a person knows what to do.

import { callTool } from "../api.js";
import { clear, h } from "../dom.js";
import { announce, button, errorBox, field, guarded, heading, input, section, table, timeElement } from "../ui.js";

const BLOCKS = "mnemo:///blocks/";

/** The budget refusal (CONFLICT, details.reason BLOCK_BUDGET_EXCEEDED) in words, with what to do about it. */
export function budgetError(error) {
  const d = error.details || {};
  if (d.reason !== "BLOCK_BUDGET_EXCEEDED") return errorBox(error);
  return h("div", { class: "error", role: "alert", id: "budget-error" },
    h("h3", {}, "Over the pinned-context budget"),
    h("p", {}, `This would make your pinned context ${d.wouldBe} tokens, over its budget of ${d.limit}: `,
      `${d.current} tokens are pinned now and this file has ${d.size}.`),
    h("p", {}, "What to do: unpin a block you can spare, or edit a pinned block to make it shorter, then try again."),
    d.advice ? h("p", {}, h("small", {}, d.advice)) : null);
}

async function attempt(place, work) {
  clear(place);
  try {
    return await work();
  } catch (error) {
    clear(place, budgetError(error));
    return undefined;
  }
}

export async function render(view) {
  const pinned = h("div", { id: "pinned" });
  const all = h("div", { id: "all-blocks" });
  const editor = h("div", { id: "editor" });
  const feedback = h("div", { id: "block-feedback" });
  const refresh = async () => {
    await Promise.all([showPinned(pinned, feedback, editor, refresh), showAll(all, feedback, editor, refresh)]);
  };
  view.append(
    heading("Pinned blocks"),
    h("p", { class: "lead" }, "Pinned blocks are what every turn of your agents sees, in this order, within a token budget."),
    feedback,
    section("Pinned context", pinned),
    section("Your blocks and skills", all),
    editor,
    section("New block", newBlockForm(feedback, refresh)),
  );
  await refresh();
}

async function showPinned(place, feedback, editor, refresh) {
  const answer = await guarded(place, () => callTool("pinned_context", {}));
  if (!answer) return;
  const percent = answer.budgetTokens ? Math.round((100 * answer.totalTokens) / answer.budgetTokens) : 0;
  clear(place,
    h("div", { class: "gauge" },
      h("label", { for: "budget-gauge" }, "Budget used"),
      h("meter", { id: "budget-gauge", min: 0, max: answer.budgetTokens, value: answer.totalTokens, high: answer.budgetTokens * 0.8, optimum: 0 }),
      h("span", { id: "budget-text" }, `${answer.totalTokens.toLocaleString("en")} / ${answer.budgetTokens.toLocaleString("en")} tokens (${percent}%)`)),
    answer.inactive ? h("p", {}, `${answer.inactive} pinned files of other projects also count.`) : null,
    answer.blocks.length
      ? h("ol", { class: "pinned", "aria-label": "Pinned, in order" }, answer.blocks.map((block, index) =>
        h("li", { "data-path": block.path },
          h("code", {}, block.path), ` ${block.tokens} tokens, version ${block.version} `,
          h("span", { class: "actions" },
            index > 0 ? button("Move up", () => pin(block.path, feedback, refresh, index - 1), { "aria-label": `Move ${block.path} up` }) : null,
            button("Edit", () => edit(block.path, editor, feedback, refresh), { "aria-label": `Edit ${block.path}` }),
            button("Unpin", () => unpin(block.path, feedback, refresh), { "aria-label": `Unpin ${block.path}` })))))
      : h("p", {}, "Nothing is pinned."));
}

async function showAll(place, feedback, editor, refresh) {
  const answer = await guarded(place, () => callTool("file_list", { path: "mnemo:///" }));
  if (!answer) return;
  clear(place, answer.entries.length
    ? table(["File", "Tokens", "Updated", "Pinned", "Actions"], answer.entries.map((entry) =>
      h("tr", { "data-path": entry.path },
        h("td", {}, h("code", {}, entry.path)),
        h("td", {}, String(entry.tokens)),
        h("td", {}, timeElement(entry.lastUpdated)),
        h("td", {}, entry.pinned ? "yes" : "no"),
        h("td", {}, h("div", { class: "actions" },
          entry.pinned
            ? button("Unpin", () => unpin(entry.path, feedback, refresh), { "aria-label": `Unpin ${entry.path}` })
            : button("Pin", () => pin(entry.path, feedback, refresh), { "aria-label": `Pin ${entry.path}` }),
          button("Edit", () => edit(entry.path, editor, feedback, refresh), { "aria-label": `Edit ${entry.path}` }))))))
    : h("p", {}, "You have no blocks yet."));
}

async function pin(path, feedback, refresh, position) {
  const body = position === undefined ? { path } : { path, position };
  const answer = await attempt(feedback, () => callTool("block_pin", body));
  if (!answer) return;
  announce(answer.message);
  await refresh();
}

async function unpin(path, feedback, refresh) {
  const answer = await attempt(feedback, () => callTool("block_unpin", { path }));
  if (!answer) return;
  announce(answer.message);
  await refresh();
}

async function edit(path, place, feedback, refresh) {
  const file = await guarded(place, () => callTool("file_read", { path }));
  if (!file) return;
  const result = h("div");
  const form = h("form", { class: "stack", "aria-label": `Edit ${path}` },
    h("h2", {}, `Edit ${path}`),
    field("Content", h("textarea", { name: "content", rows: 12, text: file.content })),
    h("div", { class: "actions" }, h("button", { type: "submit" }, "Save"), button("Close", () => clear(place))),
    result);
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const answer = await attempt(result, () => callTool("file_write", { path, content: form.content.value, expectedVersion: file.version }));
    if (!answer) return;
    announce(answer.message);
    clear(place);
    clear(feedback);
    await refresh();
  });
  clear(place, form);
  form.content.focus();
}

function newBlockForm(feedback, refresh) {
  const result = h("div");
  const form = h("form", { class: "stack", id: "block-new", "aria-label": "New block" },
    field("Name", input("name", { required: true, placeholder: "decisions.md" })),
    field("Content", h("textarea", { name: "content", rows: 5, required: true })),
    h("div", {}, h("button", { type: "submit" }, "Create block")),
    result);
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const path = BLOCKS + form.name.value.trim();
    const answer = await attempt(result, () => callTool("file_write", { path, content: form.content.value, expectedVersion: 0 }));
    if (!answer) return;
    announce(answer.message);
    form.reset();
    clear(feedback);
    await refresh();
  });
  return form;
}
