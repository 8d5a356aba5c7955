// Who the console acts as. Locally: the X-Mnemo-* headers `mnemo serve` reads (defaults as the server's:
// tenant local, user local). Deployed: a bearer token from the user's sign-in (AuthMode JWT or COGNITO).
// Identity never goes in a tool body: the API takes it from these headers or the token alone.

const KEY = "mnemo.console.identity";

export const FIELDS = ["tenant", "user", "agent", "session", "project", "team", "org"];
export const DEFAULTS = { tenant: "local", user: "local", agent: "", session: "", project: "", team: "", org: "", roles: "", token: "" };

// The memory layers, most specific first, and the ids each needs (mnemo.context.LAYER_IDS).
export const LAYERS = ["agent", "user", "session", "project", "team", "org", "company"];
const LAYER_IDS = {
  agent: ["user", "agent"], user: ["user"], session: ["user", "session"], project: ["project"], team: ["team"], org: ["org"], company: [],
};

export function loadIdentity() {
  try {
    const stored = JSON.parse(localStorage.getItem(KEY) || "{}");
    return { ...DEFAULTS, ...stored };
  } catch {
    return { ...DEFAULTS };
  }
}

export function saveIdentity(identity) {
  localStorage.setItem(KEY, JSON.stringify({ ...DEFAULTS, ...identity }));
  window.dispatchEvent(new CustomEvent("identitychange"));
}

export function resetIdentity() {
  localStorage.removeItem(KEY);
  window.dispatchEvent(new CustomEvent("identitychange"));
}

function capitalised(name) {
  return name.charAt(0).toUpperCase() + name.slice(1);
}

/** The headers every tool call carries. A blank field is left out (the server refuses an empty header). */
export function identityHeaders(identity = loadIdentity()) {
  if (identity.token.trim()) return { Authorization: `Bearer ${identity.token.trim()}` };
  const headers = {};
  for (const name of FIELDS) {
    if (identity[name]) headers[`X-Mnemo-${capitalised(name)}`] = identity[name];
  }
  if (identity.roles.trim()) headers["X-Mnemo-Roles"] = identity.roles.trim();
  return headers;
}

/**
 * The claims a JWT carries, read only to name the signed-in user on the page. The API checks the token's
 * signature and maps its claims; the console trusts nothing it reads here. Null when it is no JWT.
 */
export function tokenClaims(token) {
  const parts = token.trim().split(".");
  if (parts.length !== 3) return null;
  try {
    const json = atob(parts[1].replace(/-/g, "+").replace(/_/g, "/").padEnd(Math.ceil(parts[1].length / 4) * 4, "="));
    const claims = JSON.parse(new TextDecoder().decode(Uint8Array.from(json, (c) => c.charCodeAt(0))));
    return claims && typeof claims === "object" ? claims : null;
  } catch {
    return null;
  }
}

/** One line naming the identity, for the page's header. */
export function describeIdentity(identity = loadIdentity()) {
  if (identity.token.trim()) {
    const claims = tokenClaims(identity.token) || {};
    const who = claims.email || claims["cognito:username"] || claims.username || claims.sub;
    return who ? `Signed in as ${who}` : "Signed in with a bearer token";
  }
  const parts = FIELDS.filter((name) => identity[name]).map((name) => `${name} ${identity[name]}`);
  return `Acting as ${parts.join(", ")}`;
}

/**
 * The layers this identity can read, as the API decides it from the headers (a blank user is the server's
 * default, local). Null with a bearer token: its claims, which the console does not map, decide.
 */
export function readableLayers(identity = loadIdentity()) {
  if (identity.token.trim()) return null;
  const ids = { ...identity, user: identity.user || DEFAULTS.user };
  return LAYERS.filter((layer) => LAYER_IDS[layer].every((name) => ids[name]));
}
