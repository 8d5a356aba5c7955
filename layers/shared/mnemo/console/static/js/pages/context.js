// Context: what memory_context would give the agent for a question. Type the question (the user's latest message,
// or the task the agent is about to do), optionally a token budget, the sections wanted and a time to answer as of;
// the page shows the prompt-ready text, how the budget was spent (the tokens of each section) and why each item is
// there: every source with its kind, section, layer, score, date, the turns it came from, its tokens and whether
// the text shows it whole or as an excerpt. The call carries the console's identity, as every page's calls do:
// the user and the session (of Who am I) are the ones the agent would be.
//
// `#/context?q=...&budget=...&section=turns&section=blocks&asOf=...` opens the page with the form filled and asks
// at once, so that a context can be linked.

import { callTool } from "../api.js";
import { clear, h } from "../dom.js";
import { describeIdentity, loadIdentity } from "../identity.js";
import { announce, checkboxes, checkedValues, field, guarded, heading, input, score, section, table, timeElement, turnLink, turnLinks } from "../ui.js";

// The sections a context can hold, in the order it writes them (mnemo.briefing.models.SECTIONS), and their headings
// in the text (mnemo.briefing.render.HEADINGS).
const SECTIONS = ["profile", "summary", "memories", "turns", "blocks"];
const HEADINGS = {
  profile: "About the user",
  summary: "This session so far",
  memories: "Memories",
  turns: "From past conversations",
  blocks: "Pinned blocks",
};
const DEFAULT_BUDGET = 1500;

// Why an item of each kind is in the context (mnemo.briefing.packing): the fixed ones are taken first, the ranked
// ones by their rank for the question per token they cost.
const WHY = {
  profile: "the user's profile, taken first",
  summary: "this session's summary, taken first",
  block: "pinned, taken first",
  memory: "ranked for the question",
  turn: "ranked for the question",
};
const HOW = "The profile, this session's summary and the pinned blocks are taken first, whenever they fit. Memories and " +
  "past turns are ranked for the question as memory_search ranks them, and taken by their rank per token they cost, " +
  "best first; a long turn of lower rank may stand as an excerpt, its sentences nearest the question.";

export async function render(view, params) {
  const result = h("div", { id: "context-result", "aria-live": "polite" });
  // No browser validation (novalidate): the API judges the input, and its error names the field, as an agent's
  // call would be told. The min and max still tell the spinner and a screen reader the range.
  const form = h("form", { class: "stack", id: "context-form", "aria-label": "Ask for a context", novalidate: true },
    field("Question", input("query", { required: true, maxlength: 4000, value: params.get("q") || "", placeholder: "Where should we hold the offsite?" }),
      "The user's latest message, or the task the agent is about to do."),
    h("div", { class: "row" },
      field("Budget (tokens)", input("budget", { type: "number", min: 100, max: 16000, step: 100, value: params.get("budget") || DEFAULT_BUDGET }),
        "100 to 16,000; the context never takes more."),
      field("As of", input("asOf", { value: params.get("asOf") || "", placeholder: "2025-03-03T09:00:00Z" }),
        "Optional, ISO 8601: the context as it stood then. Blank: now.")),
    checkboxes("Sections (none ticked: all of them)", "section", SECTIONS, params.getAll("section")),
    h("div", {}, h("button", { type: "submit" }, "Build the context")));
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    ask(form, result);
  });
  const identity = loadIdentity();
  const sessionless = !identity.token.trim() && !identity.session;
  view.append(
    heading("Context"),
    h("p", { class: "lead" },
      "What your agent gets from memory_context before it answers: the profile, this session's summary, the memories ",
      "and past turns that bear on the question, and the pinned blocks, in one text within a token budget, ",
      "with the reason each item is there."),
    h("p", { class: "summary", id: "context-identity" },
      `${describeIdentity(identity)}: the context is the one this identity's agent would get. `,
      sessionless ? ["No session is set, so it has no session summary: ", h("a", { href: "#/identity" }, "choose a session in Who am I"), "."] : null),
    section("Ask", form),
    section("What the agent would get", result),
  );
  if (form.query.value) await ask(form, result);
}

/** The request of the form: only what was given, so that the API's defaults stand for the rest. */
function request(form) {
  const body = { query: form.query.value };
  const budget = form.budget.value.trim();
  if (budget) body.budget = Number(budget);
  const sections = checkedValues(form, "section");
  if (sections.length) body.sections = sections;
  const asOf = form.asOf.value.trim();
  if (asOf) body.asOf = asOf;
  return body;
}

async function ask(form, place) {
  const body = request(form);
  const answer = await guarded(place, () => callTool("memory_context", body));
  if (!answer) return;
  clear(place,
    usage(answer),
    answer.truncated
      ? h("p", { class: "notice", id: "context-truncated" },
        "Some relevant items had no room in the budget, or are shown as excerpts: a larger budget holds more.")
      : null,
    h("h3", {}, "The tokens of each section"),
    sectionTable(answer, body.sections || SECTIONS),
    h("h3", {}, "The text"),
    answer.context
      ? h("pre", { id: "context-text", class: "context", tabindex: "0", "aria-label": "The context's text" }, answer.context)
      : h("p", { id: "context-empty" }, "Nothing is known that bears on this question: the context is empty."),
    h("h3", {}, "Why each item is there"),
    h("p", { class: "summary" }, HOW),
    answer.sources.length
      ? table(["#", "Kind", "Section", "Item", "Layer", "Score", "Said or stated", "From the turns", "Tokens", "Shown", "Why"],
        answer.sources.map(sourceRow), "In the order the text shows them")
      : h("p", {}, "No item."));
  announce(`Context built: ${answer.tokens} of ${answer.budget} tokens, ${answer.sources.length} ${answer.sources.length === 1 ? "item" : "items"}.`);
}

/** The budget used, as a gauge and in words. */
function usage(answer) {
  const percent = answer.budget ? Math.round((100 * answer.tokens) / answer.budget) : 0;
  return h("div", { class: "gauge" },
    h("label", { for: "context-gauge" }, "Budget used"),
    h("meter", { id: "context-gauge", min: 0, max: answer.budget, value: answer.tokens }),
    h("span", { id: "context-tokens" }, `${answer.tokens.toLocaleString("en")} / ${answer.budget.toLocaleString("en")} tokens (${percent}%)`));
}

/** One row per section asked for: its heading in the text, its items and its tokens (none: nothing written). */
function sectionTable(answer, asked) {
  const rows = asked.map((name) => {
    const items = answer.sources.filter((source) => source.section === name).length;
    const written = name in answer.sections;
    return h("tr", { "data-section": name },
      h("th", { scope: "row" }, name),
      h("td", {}, written ? `## ${HEADINGS[name]}` : "not written: nothing found or nothing fits"),
      h("td", {}, String(items)),
      h("td", { class: "tokens" }, written ? String(answer.sections[name]) : "0"));
  });
  rows.push(h("tr", { class: "total" },
    h("th", { scope: "row" }, "The whole text"),
    h("td", {}, "the sections, with the blank lines between them"),
    h("td", {}, String(answer.sources.length)),
    h("td", { class: "tokens" }, String(answer.tokens))));
  return table(["Section", "Heading in the text", "Items", "Tokens"], rows);
}

/** An item's id: a turn links to it on the Conversations page, a pinned block to the Pinned blocks page. */
function item(source) {
  if (source.kind === "turn") return turnLink(source.id);
  if (source.kind === "block") return h("a", { href: "#/blocks" }, h("code", {}, source.id));
  return h("code", {}, source.id);
}

function sourceRow(source, index) {
  // A turn's messageIds are its own id, already its Item.
  const turns = source.kind === "turn" ? [] : source.messageIds;
  return h("tr", { "data-source-id": source.id, "data-kind": source.kind, "data-excerpt": source.excerpt ? "true" : "false" },
    h("td", {}, String(index + 1)),
    h("th", { scope: "row" }, source.kind),
    h("td", {}, source.section),
    h("td", { class: "item" }, item(source)),
    h("td", {}, source.layer || "—"),
    h("td", {}, source.score === null || source.score === undefined ? "—" : score(source.score)),
    h("td", {}, timeElement(source.occurredAt)),
    h("td", {}, turnLinks(turns, `Turns ${source.id} came from`) || "—"),
    h("td", { class: "tokens" }, String(source.tokens)),
    h("td", {}, source.excerpt ? h("span", { class: "badge excerpt", title: "its sentences nearest the question" }, "excerpt") : "whole"),
    h("td", { class: "why" }, [
      WHY[source.kind] || source.kind,
      source.kind === "memory" && source.messageIds.length ? "; extracted from the turns listed" : "",
    ].join("")));
}
