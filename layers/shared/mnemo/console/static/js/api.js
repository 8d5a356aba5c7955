// The console's only way to Mnemo: POST /v1/tools/{name} with a JSON body, as every client calls it.
// An answer with success false (the error envelope) becomes a ToolError carrying its code, message and field.

import { identityHeaders } from "./identity.js";

export class ToolError extends Error {
  constructor(envelope, status) {
    super(envelope.message || `HTTP ${status}`);
    this.code = envelope.errorCode || "PROVIDER_ERROR";
    this.details = envelope.details || {};
    this.field = this.details.field || null;
    this.retryable = Boolean(envelope.retryable);
    this.status = status;
  }
}

// Relative to /ui/, so that the console works wherever the API's /v1 sits beside it.
const TOOLS = new URL("../v1/tools/", document.baseURI);

// Calls in flight, marked on the page (html[data-busy]) so that a person's tools and tests can wait for quiet.
let inFlight = 0;

function busy(change) {
  inFlight += change;
  if (inFlight > 0) document.documentElement.dataset.busy = String(inFlight);
  else delete document.documentElement.dataset.busy;
}

export async function callTool(name, body = {}) {
  busy(1);
  try {
    return await send(name, body);
  } finally {
    busy(-1);
  }
}

async function send(name, body) {
  let response;
  try {
    response = await fetch(new URL(name, TOOLS), {
      method: "POST",
      headers: { "Content-Type": "application/json", ...identityHeaders() },
      body: JSON.stringify(body),
    });
  } catch (error) {
    throw new ToolError({ errorCode: "UNAVAILABLE", message: `The server could not be reached (${error.message})` }, 0);
  }
  let payload;
  try {
    payload = await response.json();
  } catch {
    throw new ToolError({ errorCode: "PROVIDER_ERROR", message: `HTTP ${response.status}: the answer was not JSON` }, response.status);
  }
  if (!response.ok || payload.success === false) throw new ToolError(payload, response.status);
  return payload;
}
