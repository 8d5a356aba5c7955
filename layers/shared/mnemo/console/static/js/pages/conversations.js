// Conversations and executions as one timeline, linked by message_id; the topics with the general memory.
// #/conversations?message=<id> opens on that one turn first (the links from an extracted memory to its sources).

import { callTool } from "../api.js";
import { append, clear, h } from "../dom.js";
import { button, field, guarded, heading, input, section, select, tags, timeElement } from "../ui.js";

const EXPLANATION = "A person reviews this memory in the Mnemo console";

export async function render(view, params) {
  const wanted = params.get("message");
  const turn = h("div", { id: "turn" });
  const timeline = h("div", { id: "timeline" });
  const form = h("form", { class: "row", role: "search", "aria-label": "Find conversations" },
    field("Query", input("query", { required: true, value: "recent" }), "With 'newest first' the query is not used"),
    field("Order", select("strategy", [["recent", "newest first"], ["hybrid", "best match"], ["keyword", "keyword match"]], "recent")),
    field("Most", input("max", { type: "number", min: 1, max: 50, value: 20 })),
    h("div", {}, h("button", { type: "submit" }, "Show")));
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    showTimeline(form, timeline);
  });
  const general = h("div", { id: "general-memory" });
  const topics = h("div", { id: "topics" });
  const topic = h("div", { id: "topic" });
  append(view, [
    heading("Conversations and topics"),
    h("p", { class: "lead" }, "What was said, and what was done about it: each conversation with the execution stored under its message id."),
    wanted ? section(`Message ${wanted}`, turn) : null,
    section("Timeline", form, timeline),
    section("General memory", general),
    section("Topics", topics, topic),
  ]);
  await Promise.all([
    wanted ? showTurn(wanted, turn) : null, showTimeline(form, timeline), showGeneral(general), showTopics(topics, topic),
  ]);
}

/** The conversation and the execution stored under one message id (retrieve_* with message_id). */
async function showTurn(id, place) {
  const common = { message_id: id, query: id, explanation: EXPLANATION, retrieval_strategy: "recent", max_results: 1 };
  const answers = await guarded(place, () => Promise.all([callTool("retrieve_conversation", common), callTool("retrieve_execution", common)]));
  if (!answers) return;
  const [conversation] = answers[0].data.conversations;
  const [execution] = answers[1].data.executions;
  if (!conversation && !execution) {
    clear(place, h("p", {}, "No conversation or execution is stored under this message id for this identity."));
    return;
  }
  const at = conversation ? conversation.conversation_timestamp : execution.execution_timestamp;
  clear(place, h("div", { class: "turn-of", "data-turn": id }, exchange({ id, at, conversation, execution })));
}

async function showTimeline(form, place) {
  const common = {
    query: form.query.value, explanation: EXPLANATION, retrieval_strategy: form.strategy.value, max_results: Number(form.max.value || 20),
  };
  const answers = await guarded(place, () => Promise.all([callTool("retrieve_conversation", common), callTool("retrieve_execution", common)]));
  if (!answers) return;
  const [conversations, executions] = answers.map((answer) => answer.data);
  const byMessage = new Map();
  for (const conversation of conversations.conversations) {
    byMessage.set(conversation.message_id, { id: conversation.message_id, at: conversation.conversation_timestamp, conversation });
  }
  for (const execution of executions.executions) {
    const entry = byMessage.get(execution.message_id) || { id: execution.message_id, at: execution.execution_timestamp };
    entry.execution = execution;
    byMessage.set(execution.message_id, entry);
  }
  const entries = [...byMessage.values()].sort((a, b) => (a.at < b.at ? 1 : -1));
  clear(place, entries.length
    ? h("ol", { class: "timeline", "aria-label": "Conversations and executions, newest first" }, entries.map(entry))
    : h("p", {}, "No conversation or execution is stored for this identity."));
}

function entry(found) {
  return h("li", { id: `message-${found.id}`, "data-message-id": found.id }, exchange(found));
}

/** A single message (add_messages) is one turn, said by its name or role; a pair (add_conversation) is two. */
function said(conversation) {
  const message = (conversation.meta_data || {}).mnemo_message;
  if (message && typeof message === "object") {
    const speaker = message.name || message.role || "user";
    return h("div", { class: "exchange" },
      h("p", {}, h("strong", {}, `${speaker}: `), conversation.user_input || conversation.agent_response));
  }
  return h("div", { class: "exchange" },
    h("p", {}, h("strong", {}, "User: "), conversation.user_input),
    h("p", {}, h("strong", {}, "Agent: "), conversation.agent_response));
}

function exchange({ id, at, conversation, execution }) {
  return [
    h("p", { class: "meta" }, timeElement(at), " · ", h("code", {}, id)),
    conversation ? said(conversation) : h("p", {}, h("em", {}, "No conversation stored under this message id.")),
    execution
      ? h("div", { class: "execution" },
        h("p", {}, h("strong", {}, execution.success ? "Execution, succeeded: " : "Execution, failed: "), execution.execution_details.execution_summary),
        h("p", { class: "meta" }, `Tools: ${execution.execution_details.tools_used.join(" → ") || "none"} · ${execution.duration_ms} ms`),
        execution.execution_details.errors.length
          ? h("ul", { class: "errors", "aria-label": "Errors" }, execution.execution_details.errors.map((error) =>
            h("li", {}, h("code", {}, error.error_type), error.tool ? ` in ${error.tool}` : "", `: ${error.error_message}`)))
          : null,
        execution.execution_details.observations ? h("p", {}, h("strong", {}, "Observations: "), execution.execution_details.observations) : null)
      : null,
  ];
}

async function showGeneral(place) {
  const answer = await guarded(place, () => callTool("recall_general_memory", {}));
  if (!answer) return;
  clear(place,
    h("p", { class: "meta" }, `${answer.layer} layer · version ${answer.version} · updated `, timeElement(answer.lastUpdated)),
    answer.content ? h("pre", { class: "text", tabindex: "0", "aria-label": "General memory" }, answer.content) : h("p", {}, "Nothing written yet."));
}

async function showTopics(place, topicPlace) {
  const answer = await guarded(place, () => callTool("list_memories", {}));
  if (!answer) return;
  clear(place, answer.topics.length
    ? h("ul", { class: "links", "aria-label": "Topics" }, answer.topics.map((name) =>
      h("li", {}, button(name, () => showTopic(name, topicPlace), { class: "link" }))))
    : h("p", {}, "No topics yet."));
}

async function showTopic(name, place) {
  const answer = await guarded(place, () => callTool("recall_memory", { topic: name }));
  if (!answer) return;
  const title = h("h3", { tabindex: "-1" }, answer.title);
  clear(place, h("article", { class: "item" },
    title,
    h("p", {}, answer.summary),
    tags(answer.tags),
    h("p", { class: "meta" }, `version ${answer.version} · updated `, timeElement(answer.lastUpdated)),
    h("pre", { class: "text", tabindex: "0", "aria-label": `${answer.title}: content` }, answer.content)));
  title.focus();
}
