// Knowledge: items by type, layer and status; an item's text and constraints; a check playground that shows
// the violations with their lines; sync status and its failures.

import { callTool } from "../api.js";
import { clear, h } from "../dom.js";
import {
  announce, button, checkboxes, checkedValues, field, guarded, heading, input, section, select, table, timeElement,
} from "../ui.js";

const TYPES = ["adr", "policy", "pattern", "spec"];
const KNOWLEDGE_LAYERS = ["company", "org", "team", "project"];
const STATUSES = ["draft", "proposed", "accepted", "deprecated", "superseded"];

export async function render(view) {
  const items = h("div", { id: "knowledge-items" });
  const item = h("div", { id: "knowledge-item" });
  const filters = h("form", { class: "stack", role: "search", "aria-label": "Find knowledge" },
    h("div", { class: "row" },
      field("Query", input("query", { placeholder: "blank: list them all" })),
      field("Type", select("type", [["", "any"], ...TYPES.map((type) => [type, type])], "")),
      field("Layer", select("layer", [["", "any"], ...KNOWLEDGE_LAYERS.map((layer) => [layer, layer])], ""))),
    checkboxes("Status", "status", STATUSES, ["accepted"]),
    h("div", {}, h("button", { type: "submit" }, "Show items")));
  filters.addEventListener("submit", (event) => {
    event.preventDefault();
    list(filters, items, item);
  });
  const sync = h("div", { id: "sync" });
  view.append(
    heading("Knowledge"),
    h("p", { class: "lead" }, "The organisation's decisions, policies, patterns and specs that agents follow."),
    section("Items", filters, items, item),
    section("Check playground", playground()),
    section("Sync", sync),
  );
  await Promise.all([list(filters, items, item), showSync(sync)]);
}

async function list(form, place, itemPlace) {
  const body = { limit: 100, status: checkedValues(form, "status") };
  if (form.query.value) body.query = form.query.value;
  if (form.type.value) body.type = form.type.value;
  if (form.layer.value) body.layer = form.layer.value;
  if (!body.status.length) delete body.status;
  const answer = await guarded(place, () => callTool("knowledge_query", body));
  if (!answer) return;
  clear(place, answer.items.length
    ? table(["Item", "Type", "Layer", "Status", "Constraints"], answer.items.map((entry) =>
      h("tr", {},
        h("td", {}, button(entry.title, () => show(entry.id, itemPlace), { class: "link" }), h("br"), h("small", {}, h("code", {}, entry.id))),
        h("td", {}, entry.type),
        h("td", {}, entry.layer),
        h("td", {}, entry.status),
        h("td", {}, entry.hasConstraints ? "yes" : "no"))),
    `${answer.totalCount} items in ${(answer.searchedLayers || []).join(", ")}`)
    : h("p", {}, "No knowledge item matches."));
}

async function show(id, place) {
  const answer = await guarded(place, () => callTool("knowledge_show", { id, includeHistory: true }));
  if (!answer) return;
  const { item } = answer;
  const title = h("h3", { tabindex: "-1" }, item.title);
  clear(place,
    h("article", { class: "item" },
      title,
      h("p", { class: "meta" }, `${item.type} · ${item.layer} · ${item.status} · severity ${item.severity}`),
      h("p", {}, item.summary),
      h("pre", { class: "text", tabindex: "0", "aria-label": `${item.title}: text` }, item.content),
      item.constraints && item.constraints.length
        ? table(["Operator", "Target", "Pattern", "Severity", "Message"], item.constraints.map((constraint) =>
          h("tr", {},
            h("td", {}, constraint.operator), h("td", {}, constraint.target), h("td", {}, h("code", {}, constraint.pattern)),
            h("td", {}, constraint.severity), h("td", {}, constraint.message))), "Constraints")
        : h("p", {}, "No constraints."),
      answer.history && answer.history.length
        ? table(["Version", "When", "Who", "Message"], answer.history.map((entry) =>
          h("tr", {}, h("td", {}, entry.version), h("td", {}, timeElement(entry.timestamp)), h("td", {}, entry.author || "—"), h("td", {}, entry.message || "—"))), "History")
        : null));
  title.focus();
}

function playground() {
  const result = h("div", { id: "check-result" });
  const form = h("form", { class: "stack", id: "check", "aria-label": "Check a file" },
    field("File name", input("path", { required: true, value: "requirements.txt" }), "requirements.txt, package.json, a .py or .ts source…"),
    field("Content", h("textarea", { name: "content", rows: 8, required: true, placeholder: "mysql-connector-python==8.0.0" })),
    field("Report from", select("minSeverity", [["info", "info"], ["warn", "warn"], ["block", "block"]], "info")),
    h("div", {}, h("button", { type: "submit" }, "Check")));
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const body = { files: [{ path: form.path.value, content: form.content.value }], minSeverity: form.minSeverity.value };
    const answer = await guarded(result, () => callTool("knowledge_check", body));
    if (!answer) return;
    const { summary } = answer;
    clear(result,
      h("p", { class: answer.passed ? "ok" : "bad" },
        answer.passed ? "Passed" : "Blocked", `: ${summary.block} block, ${summary.warn} warn, ${summary.info} info, against ${answer.checkedItems.length} items.`),
      answer.violations.length
        ? table(["Line", "Severity", "Rule", "Message"], answer.violations.map((violation) =>
          h("tr", {},
            h("td", {}, violation.location ? `${violation.location.file}${violation.location.line ? `:${violation.location.line}` : ""}` : "—"),
            h("td", {}, violation.severity),
            h("td", {}, violation.knowledgeItemTitle),
            h("td", {}, violation.message))), "Violations")
        : h("p", {}, "No violations."));
  });
  return h("div", {}, form, result);
}

async function showSync(place) {
  const status = await guarded(place, () => callTool("sync_status", {}));
  if (!status) return;
  const result = h("div");
  clear(place,
    h("dl", { class: "pairs" },
      h("dt", {}, "Healthy"), h("dd", {}, status.healthy ? "yes" : "no"),
      h("dt", {}, "Last sync"), h("dd", {}, status.lastSyncAt ? timeElement(status.lastSyncAt) : "never", ` (${status.timeSinceSync})`),
      h("dt", {}, "Running"), h("dd", {}, status.running ? "yes" : "no"),
      h("dt", {}, "Failing files"), h("dd", {}, String(status.failedItems))),
    status.failures && status.failures.length
      ? table(["File", "Field", "Error", "Failed at", "Retries"], status.failures.map((failure) =>
        h("tr", {}, h("td", {}, h("code", {}, failure.path)), h("td", {}, failure.field || "—"), h("td", {}, failure.error),
          h("td", {}, timeElement(failure.failedAt)), h("td", {}, String(failure.retryCount)))), "Sync failures")
      : h("p", {}, "No failures."),
    h("div", { class: "actions" }, button("Sync now", async () => {
      const answer = await guarded(result, () => callTool("sync_now", {}));
      if (!answer) return;
      announce(answer.message);
      await showSync(place);
    })),
    result);
}
