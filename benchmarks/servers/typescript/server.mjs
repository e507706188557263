// The benchmark server written with the official MCP TypeScript SDK v2
// (@modelcontextprotocol/server, served on node:http through @modelcontextprotocol/node).
//
//   node server.mjs stdio             serveStdio(factory)
//   node server.mjs http PORT [--sse] createMcpHandler(factory) under toNodeHandler, on node:http
//
// Written as the SDK documents it: a per-request server factory (createMcpHandler calls it for
// every HTTP request, serveStdio once per connection), zod schemas for arguments and results,
// inputRequired(...) for the multi round-trip elicitation with a requestState sealed by the
// SDK's own HMAC codec, and the localhost Host/Origin guards the node:http recipe puts in
// front. HTTP answers are JSON (responseMode "json"); --sse serves the progress scenario,
// whose notifications only exist on an SSE stream ("auto" upgrades when one is sent).
//
// Plain JavaScript, no build step. benchmarks/envs.py copies this file next to its pinned
// node_modules (benchmarks/.node/), because Node resolves packages from the script's folder.
// The constants below mirror benchmarks/servers/_shared.py; the suite's answer checks
// (benchmarks/common.py) catch any drift.

import { randomBytes } from "node:crypto";
import { createServer } from "node:http";

import {
  localhostHostValidation,
  localhostOriginValidation,
  toNodeHandler,
} from "@modelcontextprotocol/node";
import {
  acceptedContent,
  createMcpHandler,
  createRequestStateCodec,
  inputRequired,
  inputResponse,
  McpServer,
} from "@modelcontextprotocol/server";
import { serveStdio } from "@modelcontextprotocol/server/stdio";
import * as z from "zod";

const BIG_URI = "bench://big";
const BIG_SIZE = 1024 * 1024;
const BIG_TEXT = "The quick brown fox jumps over the lazy dog. 0123456789\n"
  .repeat(20000)
  .slice(0, BIG_SIZE);
const TOOL_COUNT = 50;
const SCENARIO_TOOLS = ["echo", "place_order", "progress", "greet"];
const FILLER_NAMES = Array.from(
  { length: TOOL_COUNT - SCENARIO_TOOLS.length },
  (_, i) => `tool_${String(i + SCENARIO_TOOLS.length).padStart(2, "0")}`,
);
const PROGRESS_STEPS = 10;
const GREET_QUESTION = "What is your name?";

// Schemas are built once, outside the factory: a factory only registers them.
const Order = z.object({
  sku: z.string().min(1),
  quantity: z.number().int().min(1),
  unit_price: z.number().gt(0),
  tags: z.array(z.string()).default([]),
});
const Receipt = z.object({
  sku: z.string(),
  quantity: z.number().int(),
  total: z.number(),
  tags: z.array(z.string()),
});
const UserName = z.object({ name: z.string() });
const EchoArgs = z.object({ text: z.string() });
const OrderArgs = z.object({ order: Order });
const ProgressArgs = z.object({ steps: z.number().int().default(PROGRESS_STEPS) });
const NoArgs = z.object({});
const FillerArgs = z.object({ a: z.number().int(), b: z.string().default("x") });

// One process serves every round of a flow here, so a per-process random key is enough.
const stateCodec = createRequestStateCodec({ key: randomBytes(32) });

const text = (value) => ({ content: [{ type: "text", text: value }] });

function buildServer() {
  const server = new McpServer(
    { name: "bench", version: "1.0.0" },
    { requestState: { verify: stateCodec.verify } },
  );
  server.registerTool(
    "echo",
    { description: "Return the text unchanged.", inputSchema: EchoArgs },
    async ({ text: value }) => text(value),
  );
  server.registerTool(
    "place_order",
    { description: "Price an order.", inputSchema: OrderArgs, outputSchema: Receipt },
    async ({ order }) => {
      const receipt = {
        sku: order.sku,
        quantity: order.quantity,
        total: Math.round(order.quantity * order.unit_price * 100) / 100,
        tags: order.tags,
      };
      return { ...text(JSON.stringify(receipt)), structuredContent: receipt };
    },
  );
  server.registerTool(
    "progress",
    { description: "Report progress `steps` times, then finish.", inputSchema: ProgressArgs },
    async ({ steps }, ctx) => {
      const progressToken = ctx.mcpReq._meta?.progressToken;
      for (let done = 1; done <= steps; done++) {
        if (progressToken !== undefined) {
          await ctx.mcpReq.notify({
            method: "notifications/progress",
            params: { progressToken, progress: done, total: steps },
          });
        }
      }
      return text("done");
    },
  );
  server.registerTool(
    "greet",
    {
      description: "Ask the user for their name (an input_required round trip), then greet them.",
      inputSchema: NoArgs,
    },
    async (_args, ctx) => {
      const answer = acceptedContent(ctx.mcpReq.inputResponses, "name", UserName);
      if (answer !== undefined) {
        return text(`Hello, ${answer.name}!`);
      }
      if (inputResponse(ctx.mcpReq.inputResponses, "name").kind === "elicit") {
        return text("Hello, stranger!"); // declined or cancelled
      }
      return inputRequired({
        inputRequests: {
          name: inputRequired.elicit({ message: GREET_QUESTION, requestedSchema: UserName }),
        },
        requestState: await stateCodec.mint({ asked: "name" }),
      });
    },
  );
  for (const name of FILLER_NAMES) {
    server.registerTool(
      name,
      { description: `Filler tool ${name}: joins a number and a label.`, inputSchema: FillerArgs },
      async ({ a, b }) => text(`${name}:${a}:${b}`),
    );
  }
  server.registerResource("big", BIG_URI, { mimeType: "text/plain" }, async (uri) => ({
    contents: [{ uri: uri.href, mimeType: "text/plain", text: BIG_TEXT }],
  }));
  return server;
}

function main(argv) {
  const [transport, port, ...rest] = argv;
  if (transport === "stdio") {
    serveStdio(buildServer);
    return;
  }
  if (transport !== "http" || !port) {
    console.error("usage: server.mjs stdio | server.mjs http PORT [--sse]");
    process.exit(2);
  }
  const sse = rest.includes("--sse");
  const handler = toNodeHandler(
    createMcpHandler(buildServer, { responseMode: sse ? "auto" : "json" }),
  );
  const validateHost = localhostHostValidation();
  const validateOrigin = localhostOriginValidation();
  const httpServer = createServer((req, res) => {
    if (!validateHost(req, res) || !validateOrigin(req, res)) return;
    void handler(req, res);
  });
  httpServer.listen(Number(port), "127.0.0.1");
  const stop = () => {
    httpServer.close(() => process.exit(0));
    httpServer.closeAllConnections(); // keep-alive connections would hold close() open
  };
  process.on("SIGTERM", stop);
  process.on("SIGINT", stop);
}

main(process.argv.slice(2));
