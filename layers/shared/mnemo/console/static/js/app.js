// The console's shell: one page per section, chosen by the address's hash (#/memories, #/graph?name=Alice...).

import { clear, h } from "./dom.js";
import { describeIdentity } from "./identity.js";
import { errorBox } from "./ui.js";
import * as blocks from "./pages/blocks.js";
import * as context from "./pages/context.js";
import * as conversations from "./pages/conversations.js";
import * as extraction from "./pages/extraction.js";
import * as graph from "./pages/graph.js";
import * as identity from "./pages/identity.js";
import * as knowledge from "./pages/knowledge.js";
import * as memories from "./pages/memories.js";

const PAGES = { memories, graph, blocks, knowledge, conversations, extraction, context, identity };
const TITLES = {
  memories: "Memories", graph: "Memory graph", blocks: "Pinned blocks",
  knowledge: "Knowledge", conversations: "Conversations and topics", extraction: "Extraction", context: "Context",
  identity: "Who am I",
};

export function route() {
  const hash = window.location.hash;
  if (!hash.startsWith("#/")) return { page: "memories", params: new URLSearchParams() };
  const [path, query = ""] = hash.slice(2).split("?", 2);
  return { page: PAGES[path] ? path : "memories", params: new URLSearchParams(query) };
}

let rendering = 0;

async function show(event) {
  const { page, params } = route();
  const main = document.getElementById("main");
  const turn = ++rendering;
  document.title = `${TITLES[page]} · Mnemo console`;
  for (const link of document.querySelectorAll("nav a")) {
    if (link.getAttribute("href") === `#/${page}`) link.setAttribute("aria-current", "page");
    else link.removeAttribute("aria-current");
  }
  const view = h("div", { class: "page", "data-page": page });
  clear(main, view);
  try {
    await PAGES[page].render(view, params);
  } catch (error) {
    if (turn === rendering) view.append(errorBox(error));
  }
  // After a move to another section the focus goes to its title, so that a screen reader announces it; on
  // the first load it stays at the top of the page, where Tab reaches the skip link first.
  const title = view.querySelector("h1");
  if (event && title && turn === rendering) title.focus({ preventScroll: true });
}

function showIdentity() {
  document.getElementById("whoami").textContent = describeIdentity();
}

window.addEventListener("hashchange", show);
// The skip link jumps to the content without changing the hash, which names the section.
document.querySelector(".skip").addEventListener("click", (event) => {
  event.preventDefault();
  document.getElementById("main").focus();
});
window.addEventListener("identitychange", () => {
  showIdentity();
});
showIdentity();
show();
