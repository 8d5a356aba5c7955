// Who am I: the identity the console acts as, and (locally) the place to switch it for testing.

import { callTool } from "../api.js";
import { clear, h } from "../dom.js";
import { DEFAULTS, FIELDS, identityHeaders, loadIdentity, resetIdentity, saveIdentity, tokenClaims } from "../identity.js";
import { announce, button, field, guarded, heading, input, section } from "../ui.js";

export async function render(view) {
  const identity = loadIdentity();
  const sent = h("div", { id: "identity-headers" });
  const check = h("div", { id: "identity-check" });
  const form = h("form", { class: "stack", id: "identity", "aria-label": "Identity" },
    h("div", { class: "grid" },
      FIELDS.map((name) => field(name[0].toUpperCase() + name.slice(1), input(name, { value: identity[name], placeholder: DEFAULTS[name] ? `default: ${DEFAULTS[name]}` : "not set" }))),
      field("Roles", input("roles", { value: identity.roles, placeholder: "server default (writer)" }), "Comma-separated, e.g. writer")),
    field("Bearer token", input("token", { type: "password", value: identity.token, autocomplete: "off" }),
      "Deployed with AuthMode JWT or COGNITO: your sign-in's token. It replaces the headers above."),
    h("div", { class: "actions" },
      h("button", { type: "submit" }, "Use this identity"),
      button("Back to the defaults", () => {
        resetIdentity();
        window.dispatchEvent(new HashChangeEvent("hashchange"));
      })));
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const chosen = { ...DEFAULTS };
    for (const name of [...FIELDS, "roles", "token"]) chosen[name] = form[name].value.trim();
    saveIdentity(chosen);
    showHeaders(sent);
    announce("The console now acts as this identity.");
    verify(check);
  });
  view.append(
    heading("Who am I"),
    h("p", { class: "lead" },
      "Every call the console makes carries this identity, never more: it sees only what the API lets this identity see. ",
      "Locally, mnemo serve takes the X-Mnemo-* headers (a blank field is left out: tenant and user default to local). ",
      "Deployed, the API takes the signed-in user from the token."),
    section("Identity", form),
    section("What each call sends", sent, check),
  );
  showHeaders(sent);
  await verify(check);
}

function showHeaders(place) {
  const headers = identityHeaders();
  const identity = loadIdentity();
  const claims = identity.token ? tokenClaims(identity.token) : null;
  clear(place,
    h("pre", { tabindex: "0", "aria-label": "Headers" },
      Object.entries(headers).map(([name, value]) => `${name}: ${name === "Authorization" ? "Bearer …" : value}`).join("\n") || "(none: the server's defaults)"),
    claims
      ? h("div", {}, h("p", {}, "The token's claims, as it says (the API checks its signature and maps them to your identity):"),
        h("pre", { tabindex: "0", "aria-label": "Token claims" }, JSON.stringify(claims, null, 2)))
      : null);
}

async function verify(place) {
  const answer = await guarded(place, () => callTool("list_memories", {}));
  if (!answer) return;
  clear(place, h("p", { class: "ok" }, `The server accepts this identity: its topics live in the ${answer.layer} layer.`));
}
