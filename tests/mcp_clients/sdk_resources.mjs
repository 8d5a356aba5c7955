// The MCP TypeScript SDK's own Client against Mnemo's resources and prompts, as a host built on it would use them:
//   node sdk_resources.mjs stdio <command> [args...]     (the server inherits this process's environment)
//   node sdk_resources.mjs http <url> [Header: value]...
// Environment: BLOCK (a pinned block's URI), EDIT_OLD/EDIT_NEW (a replacement file_edit makes in it over stdio,
// where the script subscribes to it and to mnemo://pinned first), REFUSED (URIs, comma-separated, that
// resources/read must refuse), MEMORY (what memory_add stores before recall) and RECALL_QUERY (recall's query).
// It lists every resources/list page (following nextCursor), the templates, reads the block, the pinned
// context and a knowledge item, asks for each refused URI, subscribes (or reports why not), gets the recall
// prompt and an unknown one, then prints one JSON report on stdout for tests/e2e/test_mcp_clients_resources.py.
// What the SDK throws is reported as `thrown` ({code, message, data}), never swallowed.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ResourceUpdatedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";

const [kind, target, ...rest] = process.argv.slice(2);
const env = process.env;

function transport() {
  if (kind === "stdio") {
    return new StdioClientTransport({ command: target, args: rest, env: { ...env }, stderr: "pipe" });
  }
  if (kind === "http") {
    const headers = Object.fromEntries(
      rest.map((pair) => {
        const at = pair.indexOf(":");
        return [pair.slice(0, at).trim(), pair.slice(at + 1).trim()];
      }),
    );
    return new StreamableHTTPClientTransport(new URL(target), { requestInit: { headers } });
  }
  throw new Error(`unknown transport ${kind}`);
}

async function attempt(call) {
  try {
    return await call();
  } catch (error) {
    return { thrown: { code: error.code ?? null, message: String(error.message), data: error.data ?? null } };
  }
}

function read(result) {
  if (result.thrown) return result;
  const [content] = result.contents;
  return { count: result.contents.length, uri: content.uri, mimeType: content.mimeType, text: content.text, meta: content._meta };
}

// Resolves with the URIs of the first `count` resources/updated notifications, or what arrived within 30 s.
function updates(count) {
  const seen = [];
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(seen), 30_000);
    client.setNotificationHandler(ResourceUpdatedNotificationSchema, (notification) => {
      seen.push(notification.params.uri);
      if (seen.length === count) {
        clearTimeout(timer);
        resolve(seen);
      }
    });
  });
}

const client = new Client({ name: "mnemo-ts-sdk-resources-check", version: "1.0.0" });
const wire = transport();
let serverLog = "";
if (kind === "stdio") {
  wire.stderr?.on("data", (chunk) => {
    serverLog += chunk;
  });
}
const report = {};
try {
  await client.connect(wire);
  const capabilities = client.getServerCapabilities();
  report.capabilities = { resources: capabilities.resources ?? null, prompts: capabilities.prompts ?? null };

  report.pages = [];
  let cursor;
  do {
    const page = await client.listResources(cursor === undefined ? {} : { cursor });
    report.pages.push(page.resources.map((resource) => resource.uri));
    cursor = page.nextCursor;
  } while (cursor !== undefined && report.pages.length < 20);
  report.templates = (await client.listResourceTemplates()).resourceTemplates.map((t) => t.uriTemplate);

  report.block = read(await attempt(() => client.readResource({ uri: env.BLOCK })));
  report.pinned = read(await attempt(() => client.readResource({ uri: "mnemo://pinned" })));
  report.knowledge = read(await attempt(() => client.readResource({ uri: "knowledge://adr-042-database-selection" })));
  report.refused = {};
  for (const uri of env.REFUSED.split(",")) {
    report.refused[uri] = await attempt(() => client.readResource({ uri }));
  }

  if (capabilities.resources?.subscribe) {
    await client.subscribeResource({ uri: env.BLOCK });
    await client.subscribeResource({ uri: "mnemo://pinned" });
    const arrived = updates(2);
    report.edit = await attempt(() =>
      client.callTool({ name: "file_edit", arguments: { path: env.BLOCK, old: env.EDIT_OLD, new: env.EDIT_NEW } }),
    );
    report.updated = await arrived;
    report.edited = read(await attempt(() => client.readResource({ uri: env.BLOCK })));
  } else {
    // Not advertised (stateless HTTP); the SDK sends it anyway (no enforceStrictCapabilities): the server answers.
    report.subscribe = await attempt(() => client.subscribeResource({ uri: env.BLOCK }));
  }

  report.prompts = (await client.listPrompts()).prompts;
  report.remembered = await attempt(() => client.callTool({ name: "memory_add", arguments: { content: env.MEMORY } }));
  report.recall = await attempt(() =>
    client.getPrompt({ name: "recall", arguments: { query: env.RECALL_QUERY, budget: "2000" } }),
  );
  report.badBudget = await attempt(() => client.getPrompt({ name: "recall", arguments: { query: "x", budget: "9" } }));
  report.unknownPrompt = await attempt(() => client.getPrompt({ name: "no_such_prompt", arguments: {} }));
} catch (error) {
  report.failed = String(error?.stack ?? error);
  report.serverLog = serverLog.slice(-4000);
} finally {
  await client.close();
}
process.stdout.write(JSON.stringify(report));
