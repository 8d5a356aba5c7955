// The MCP TypeScript SDK's own Client against Mnemo, as a host built on it would call:
//   node sdk_client.mjs stdio <command> [args...]     (the server inherits this process's environment)
//   node sdk_client.mjs http <url> [Header: value]...
// It lists the tools, stores a memory, sends memory_search an invalid limit and calls a tool that does
// not exist, then prints one JSON report on stdout for tests/e2e/test_mcp_clients.py to judge.
// Client.callTool validates structuredContent against the tool's outputSchema; what it throws is
// reported as `thrown`, never swallowed.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [kind, target, ...rest] = process.argv.slice(2);

function transport() {
  if (kind === "stdio") {
    return new StdioClientTransport({ command: target, args: rest, env: { ...process.env }, stderr: "pipe" });
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
    const result = await call();
    return {
      isError: result.isError ?? false,
      texts: result.content.filter((block) => block.type === "text").map((block) => block.text),
      structuredContent: result.structuredContent ?? null,
    };
  } catch (error) {
    return { thrown: { code: error.code ?? null, message: String(error.message) } };
  }
}

const client = new Client({ name: "mnemo-ts-sdk-check", version: "1.0.0" });
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
  report.tools = (await client.listTools()).tools.map((tool) => tool.name);
  report.ok = await attempt(() =>
    client.callTool({ name: "memory_add", arguments: { content: "The TypeScript SDK stored this" } }),
  );
  report.bad = await attempt(() => client.callTool({ name: "memory_search", arguments: { query: "x", limit: 0 } }));
  report.unknown = await attempt(() => client.callTool({ name: "no_such_tool", arguments: {} }));
} catch (error) {
  report.failed = String(error?.stack ?? error);
  report.serverLog = serverLog.slice(-4000);
} finally {
  await client.close();
}
process.stdout.write(JSON.stringify(report));
