// Widgets every page shares: labelled fields, error and status messages, the confirmation dialog, dates, scores.

import { clear, h, uid } from "./dom.js";

/** A labelled control: the label names the input for screen readers and for a click. */
export function field(label, control, hint) {
  const id = control.id || uid("field");
  control.id = id;
  const hintId = hint ? `${id}-hint` : null;
  if (hintId) control.setAttribute("aria-describedby", hintId);
  return h("div", { class: "field" }, h("label", { for: id }, label), control, hint ? h("small", { id: hintId }, hint) : null);
}

export function input(name, attributes = {}) {
  return h("input", { name, type: "text", ...attributes });
}

export function select(name, options, selected) {
  return h(
    "select",
    { name },
    options.map(([value, label]) => h("option", { value, selected: value === selected }, label)),
  );
}

export function checkboxes(legend, name, values, checked = []) {
  return h(
    "fieldset",
    { class: "checks" },
    h("legend", {}, legend),
    values.map((value) => {
      const id = uid(name);
      return h("span", { class: "check" },
        h("input", { type: "checkbox", id, name, value, checked: checked.includes(value) }),
        h("label", { for: id }, value));
    }),
  );
}

export function checkedValues(form, name) {
  return [...form.querySelectorAll(`input[name="${name}"]:checked`)].map((box) => box.value);
}

export function button(label, onclick, attributes = {}) {
  return h("button", { type: "button", onclick, ...attributes }, label);
}

/** What went wrong, for a person: the envelope's code, message and the field it names. */
export function errorBox(error) {
  const details = error.details || {};
  return h(
    "div",
    { class: "error", role: "alert" },
    h("p", {}, h("strong", {}, error.code || "ERROR"), ": ", error.message || String(error)),
    error.field ? h("p", {}, "Field: ", h("code", {}, error.field)) : null,
    error.retryable ? h("p", {}, "This may work if you try again.") : null,
    details.reason ? h("p", {}, "Reason: ", h("code", {}, details.reason)) : null,
  );
}

/** Run ``work`` and show its failure in ``place`` (cleared first); the page never breaks on a bad answer. */
export async function guarded(place, work) {
  clear(place);
  place.setAttribute("aria-busy", "true");
  try {
    return await work();
  } catch (error) {
    clear(place, errorBox(error));
    return undefined;
  } finally {
    place.removeAttribute("aria-busy");
  }
}

export function announce(message) {
  const status = document.getElementById("status");
  clear(status, message);
  clearTimeout(announce.timer);
  announce.timer = setTimeout(() => clear(status), 6000);
}

/** Ask before something that cannot be undone. Resolves true only when the person confirms. */
export function confirmAction({ title, message, confirmLabel = "Delete" }) {
  const dialog = document.getElementById("confirm");
  dialog.querySelector("#confirm-title").textContent = title;
  dialog.querySelector("#confirm-message").textContent = message;
  dialog.querySelector("#confirm-ok").textContent = confirmLabel;
  dialog.returnValue = "";
  return new Promise((resolve) => {
    dialog.addEventListener("close", () => resolve(dialog.returnValue === "confirm"), { once: true });
    dialog.showModal();
    dialog.querySelector("#confirm-cancel").focus();  // the safe choice has the focus
  });
}

export function when(value) {
  if (!value) return "—";
  const date = new Date(value);
  return Number.isNaN(date.getTime()) ? String(value) : date.toISOString().replace("T", " ").replace(/:\d\d(\.\d+)?Z$/, " UTC");
}

export function timeElement(value) {
  return value ? h("time", { datetime: value }, when(value)) : "—";
}

/** A 0-1 score as a number and a meter. */
export function score(value) {
  return h("span", { class: "score" },
    h("meter", { min: 0, max: 1, value, "aria-label": `Score ${value.toFixed(2)}` }),
    h("span", { class: "value" }, value.toFixed(2)));
}

export function tags(list) {
  return (list || []).length ? h("ul", { class: "tags", "aria-label": "Tags" }, list.map((tag) => h("li", {}, tag))) : null;
}

export function heading(text, level = 1) {
  return h(`h${level}`, { tabindex: level === 1 ? "-1" : null }, text);
}

export function section(title, ...children) {
  const id = uid("section");
  return h("section", { "aria-labelledby": id }, h("h2", { id }, title), ...children);
}

export function table(headers, rows, caption) {
  return h(
    "table",
    {},
    caption ? h("caption", {}, caption) : null,
    h("thead", {}, h("tr", {}, headers.map((name) => h("th", { scope: "col" }, name)))),
    h("tbody", {}, rows),
  );
}

/** A link to a stored turn (a conversation or an execution record, by its message id) on the Conversations page. */
export function turnLink(messageId) {
  return h("a", { href: `#/conversations?message=${encodeURIComponent(messageId)}`, class: "turn" }, h("code", {}, messageId));
}

/** Links to the turns a memory came from, as one list. */
export function turnLinks(messageIds, label = "Source turns") {
  return (messageIds || []).length
    ? h("ul", { class: "turns", "aria-label": label }, messageIds.map((id) => h("li", {}, turnLink(id))))
    : null;
}
