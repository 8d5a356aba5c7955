// Extraction: what the strategies learned from the identity's turns. Whether extraction is on (and how to turn it
// on), the turns waiting, each strategy's standing, and the recent runs per session: every candidate memory, the
// decision taken (added, kept, superseded, merged, outdated, refused), links to the turns it came from, and each
// failure with the model's raw answer; the user's profile when the profile strategy is on. Preview runs the
// strategies without writing (memory_extract dryRun); Run now writes.

import { callTool } from "../api.js";
import { clear, h } from "../dom.js";
import { announce, button, field, guarded, heading, input, section, table, timeElement, turnLinks } from "../ui.js";

const DECISIONS = {
  added: "a new memory",
  kept: "the same fact was stored already: its source turns were added to it",
  superseded: "replaces every current memory about the same subject (kept, marked superseded)",
  merged: "said again in this batch about the same subject: one memory cites every turn",
  outdated: "older than the subject's current memory: kept as its history, already superseded",
  refused: "not stored",
};

const TRIGGERS = { turns: "enough turns waited", idle: "the session went quiet", demand: "run on demand", backfill: "backfill" };

export async function render(view) {
  const status = h("div", { id: "extraction-status" });
  const result = h("div", { id: "extraction-result", "aria-live": "polite" });
  const runs = h("div", { id: "extraction-runs" });
  const runsForm = h("form", { class: "row", id: "extraction-runs-form", "aria-label": "Recent runs" },
    field("Runs to show", input("runs", { type: "number", min: 1, max: 50, value: 10 }), "newest first"),
    h("div", {}, h("button", { type: "submit" }, "Show runs")));
  runsForm.addEventListener("submit", (event) => {
    event.preventDefault();
    refresh();
  });
  const controls = h("div", { class: "actions", id: "extraction-controls" },
    button("Preview (dry run)", () => extract(true), { id: "extraction-preview" }),
    h("button", { type: "button", id: "extraction-now", class: "primary", onclick: () => extract(false) }, "Run now"));
  const runSection = section("Run now", h("p", {},
    "Run the strategies now over the turns waiting, instead of waiting for the background run. ",
    "The preview shows what they would extract and decide, and writes nothing: the turns stay waiting."), controls, result);
  runSection.hidden = true;  // until the status says extraction is on

  async function refresh() {
    const count = Math.min(50, Math.max(1, Number(runsForm.runs.value || 10)));
    const answer = await guarded(status, () => callTool("extraction_status", { runs: count }));
    if (!answer) {
      clear(runs);
      return;
    }
    showStatus(answer, status);
    runSection.hidden = !answer.enabled;
    showRuns(answer.recentRuns, runs, answer.enabled);
  }

  async function extract(dryRun) {
    const buttons = [...controls.querySelectorAll("button")];
    for (const one of buttons) one.disabled = true;  // one run at a time
    let answer;
    try {
      answer = await guarded(result, () => callTool("memory_extract", { dryRun }));
    } finally {
      for (const one of buttons) one.disabled = false;
    }
    if (!answer) return;
    clear(result,
      h("p", { class: "ok" }, answer.message),
      h("p", { class: "summary" }, `Turns still waiting: ${answer.pendingTurns}.`),
      answer.run ? runView(answer.run, 3) : null);
    announce(answer.message);
    if (!dryRun) await refresh();
  }

  view.append(
    heading("Extraction"),
    h("p", { class: "lead" },
      "What Mnemo learned from your agents' conversations: the memories each strategy proposed, what was decided ",
      "about each, the turns it came from, and what failed."),
    section("Status", status),
    runSection,
    section("Recent runs", runsForm, runs),
  );
  await refresh();
}

function showStatus(answer, place) {
  if (!answer.enabled) {
    clear(place,
      h("div", { class: "off", id: "extraction-off" },
        h("p", {}, h("strong", {}, "Extraction is off."), " Memories are stored only when an agent or a person adds them; everything else in Mnemo works without it."),
        h("p", {}, "To turn it on: ", h("span", { class: "how" }, answer.howToEnable || "see the deployment's settings."))));
    return;
  }
  const trigger = answer.trigger || {};
  const on = answer.strategies.filter((strategy) => strategy.enabled);
  const failed = answer.strategies.filter((strategy) => strategy.lastFailure);
  clear(place,
    h("dl", { class: "pairs" },
      h("dt", {}, "Session"), h("dd", {}, answer.session ? h("code", {}, answer.session) : "none (turns sent without a session id)",
        " · ", h("a", { href: "#/identity" }, "another session: Who am I")),
      h("dt", {}, "Turns waiting"), h("dd", { id: "extraction-pending" }, String(answer.pendingTurns)),
      h("dt", {}, "Last turn"), h("dd", {}, timeElement(answer.lastTurnAt)),
      h("dt", {}, "Last run"), h("dd", {}, timeElement(answer.lastRunAt)),
      h("dt", {}, "A run starts"), h("dd", {},
        `every ${trigger.everyTurns ?? "?"} turns, or once the session has been quiet ${trigger.idleMinutes ?? "?"} minutes; `,
        trigger.judge ? "a model judges two wordings of one subject (update, same or merge)" : "no judge: a newer memory about the same subject replaces the older one")),
    table(
      ["Strategy", "Model", "Turns waiting", "Runs", "Added", "Kept", "Superseded", "Merged", "Outdated", "Failures", "Tokens in / out", "Last run"],
      on.map((strategy) => h("tr", { "data-strategy": strategy.strategy },
        h("th", { scope: "row" }, strategy.strategy),
        h("td", {}, strategy.model ? h("code", {}, strategy.model) : "—"),
        h("td", {}, String(strategy.pendingTurns)),
        h("td", {}, String(strategy.runs)),
        h("td", {}, String(strategy.added)),
        h("td", {}, String(strategy.kept)),
        h("td", {}, String(strategy.superseded)),
        h("td", {}, String(strategy.merged ?? 0)),
        h("td", {}, String(strategy.outdated ?? 0)),
        h("td", {}, String(strategy.failures)),
        h("td", {}, `${strategy.inputTokens} / ${strategy.outputTokens}`),
        h("td", {}, timeElement(strategy.lastRunAt)))),
      "The strategies on"),
    h("p", { class: "summary" }, `Off: ${answer.strategies.filter((strategy) => !strategy.enabled).map((strategy) => strategy.strategy).join(", ") || "none"}.`),
    answer.profile ? profileView(answer.profile) : null,
    failed.map((strategy) => h("div", { class: "last-failure", "data-strategy": strategy.strategy },
      h("h3", {}, `Last failure of ${strategy.strategy}`), failure(strategy.lastFailure))));
}

/** The user's running profile: its text, size, when it was written and the memories it was built from. */
function profileView(profile) {
  return h("div", { class: "profile", id: "extraction-profile" },
    h("h3", {}, "Profile"),
    h("p", { class: "content" }, profile.text),
    h("p", { class: "meta" },
      h("span", {}, `${profile.tokens} tokens`),
      h("span", {}, "written ", timeElement(profile.builtAt)),
      h("span", {}, `from ${profile.memoryIds.length} memories: `, ...profile.memoryIds.map((id) => h("code", {}, id, " "))),
      profile.pending ? h("span", {}, `${profile.pending} changed memories wait for the next rewrite`) : null));
}

/** The runs, grouped by session (newest first within each), each with its strategies' candidates and failures. */
function showRuns(runs, place, enabled) {
  if (!runs.length) {
    clear(place, h("p", {}, enabled
      ? "No run yet. Runs start in the background as turns arrive (add_messages), or with Run now."
      : "No run: extraction is off."));
    return;
  }
  const sessions = new Map();
  for (const run of runs) {
    const key = run.session || "";
    if (!sessions.has(key)) sessions.set(key, []);
    sessions.get(key).push(run);
  }
  clear(place, [...sessions].map(([session, list]) =>
    h("div", { class: "session", "data-session": session },
      h("h3", {}, session ? `Session ${session}` : "No session"),
      list.map((run) => runView(run, 4)))));
}

function runView(run, level) {
  const title = [timeElement(run.at), ` · ${TRIGGERS[run.trigger] || run.trigger}`, ` · ${run.turns.length} ${run.turns.length === 1 ? "turn" : "turns"}`];
  return h("article", { class: "run", "data-run-id": run.runId, "data-dry-run": run.dryRun ? "true" : null },
    h(`h${level}`, {}, run.dryRun ? "Preview, " : "Run, ", ...title, run.dryRun ? " (dry run: nothing written)" : ""),
    h("div", { class: "read" }, h("p", { class: "meta" }, "The turns it read:"), turnLinks(run.turns, `Turns run ${run.runId} read`)),
    run.strategies.map((part) => strategyView(part, run, level + 1)));
}

function strategyView(part, run, level) {
  return h("div", { class: "strategy", "data-strategy": part.strategy },
    h(`h${level}`, {}, part.strategy),
    h("p", { class: "meta" },
      h("span", {}, "model ", h("code", {}, part.model)),
      h("span", {}, `tokens ${part.inputTokens} in / ${part.outputTokens} out`)),
    part.failure ? failure(part.failure) : null,
    part.candidates.length
      ? table(["Decision", "Memory", "Subject", "From the turns", "Memory id", "Why"],
        part.candidates.map(candidateRow), `What ${part.strategy} proposed, and what was decided`)
      : (part.failure ? null : h("p", {}, "Proposed nothing from these turns.")));
}

function candidateRow(candidate) {
  let why = DECISIONS[candidate.decision] || "";
  if (candidate.decision === "superseded" && candidate.supersedes) why = [why, ": ", h("code", {}, candidate.supersedes)];
  if (candidate.decision === "refused") why = candidate.reason || why;
  else if (candidate.reason) why = [why, ` (${candidate.reason})`];
  return h("tr", { "data-decision": candidate.decision },
    h("td", {}, h("span", { class: `decision decision-${candidate.decision}` }, candidate.decision)),
    h("td", { class: "content" }, candidate.text),
    h("td", {}, candidate.subject || "—"),
    h("td", {}, turnLinks(candidate.sourceIds, "Source turns") || "—"),
    h("td", {}, candidate.memoryId ? h("code", {}, candidate.memoryId) : "—"),
    h("td", {}, why));
}

/** A strategy's failure: what went wrong and, when the model answered, its raw answer. */
function failure(found) {
  return h("div", { class: "failure" },
    h("p", {}, h("strong", {}, "Failed: "), found.message),
    found.raw
      ? [h("p", {}, "The model's raw answer:"), h("pre", { class: "raw", tabindex: "0", "aria-label": "The model's raw answer" }, found.raw)]
      : h("p", { class: "summary" }, "The model gave no answer."));
}
