// A 2025-11-25 server whose tools run as that era's tasks (tasks/get, tasks/result,
// tasks/cancel), made with the official TypeScript SDK pinned in package.json, for
// tests/test_client_legacy_tasks.py. It speaks stdio, or Streamable HTTP on 127.0.0.1 with
// `--http PORT` (one SDK server per session, as the SDK's own examples serve them).
//
// Tools: sleepy (completes after `ms`), confirm (asks "Go ahead?" inside its task),
// gated (works until cancelled), failing (a tool error: the task fails), plain (no task).
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';

import { InMemoryTaskMessageQueue, InMemoryTaskStore } from '@modelcontextprotocol/sdk/experimental/tasks';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { ElicitResultSchema, isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';

const POLL_MS = 10;
const TTL_MS = 60_000;
const store = new InMemoryTaskStore();
const queue = new InMemoryTaskMessageQueue();

const text = (value) => ({ content: [{ type: 'text', text: value }] });

// Every task tool answers tasks/get and tasks/result from the store.
const fromStore = {
  getTask: async (_args, extra) => extra.taskStore.getTask(extra.taskId),
  getTaskResult: async (_args, extra) => extra.taskStore.getTaskResult(extra.taskId),
};

function taskTool(server, name, description, inputSchema, work) {
  server.experimental.tasks.registerToolTask(
    name,
    { description, inputSchema, execution: { taskSupport: 'optional' } },
    {
      ...fromStore,
      createTask: async (args, extra) => {
        const task = await extra.taskStore.createTask({ ttl: TTL_MS, pollInterval: POLL_MS });
        work(args, extra, task.taskId).catch((error) => {
          process.stderr.write(`task ${task.taskId} of ${name} broke: ${error}\n`);
        });
        return { task };
      },
    },
  );
}

function build() {
  const server = new McpServer(
    { name: 'ts-legacy-tasks', version: '1.0.0' },
    {
      capabilities: { tasks: { list: {}, cancel: {}, requests: { tools: { call: {} } } } },
      taskStore: store,
      taskMessageQueue: queue,
    },
  );

  taskTool(server, 'sleepy', 'Completes after ms milliseconds.', { ms: z.number() }, async ({ ms }, extra, taskId) => {
    await new Promise((resolve) => setTimeout(resolve, ms));
    await extra.taskStore.storeTaskResult(taskId, 'completed', text(`slept ${ms}`));
  });

  taskTool(server, 'confirm', 'Asks for a confirmation inside its task.', {}, async (_args, extra, taskId) => {
    const answer = await extra.sendRequest(
      {
        method: 'elicitation/create',
        params: {
          mode: 'form',
          message: 'Go ahead?',
          requestedSchema: { type: 'object', properties: { confirm: { type: 'boolean' } }, required: ['confirm'] },
        },
      },
      ElicitResultSchema,
      { relatedTask: { taskId } },
    );
    const confirmed = answer.action === 'accept' && answer.content?.confirm === true;
    await extra.taskStore.storeTaskResult(taskId, 'completed', text(confirmed ? 'confirmed' : 'declined'));
  });

  taskTool(server, 'gated', 'Works until it is cancelled.', {}, async (_args, extra, taskId) => {
    await extra.taskStore.updateTaskStatus(taskId, 'working', 'waiting for a gate that never opens');
  });

  taskTool(server, 'failing', 'A tool error: its task fails.', {}, async (_args, extra, taskId) => {
    await extra.taskStore.storeTaskResult(taskId, 'failed', { ...text('could not do it'), isError: true });
  });

  server.registerTool('plain', { description: 'Never a task.', inputSchema: { text: z.string() } }, async ({ text: value }) =>
    text(`plain ${value}`),
  );
  return server;
}

async function serveHttp(port) {
  const sessions = new Map();
  const http = createServer(async (req, res) => {
    const chunks = [];
    for await (const chunk of req) chunks.push(chunk);
    const body = chunks.length ? JSON.parse(Buffer.concat(chunks).toString()) : undefined;
    const sessionId = req.headers['mcp-session-id'];
    let transport = sessionId ? sessions.get(sessionId) : undefined;
    if (!transport && req.method === 'POST' && body && isInitializeRequest(body)) {
      transport = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (id) => sessions.set(id, transport),
      });
      transport.onclose = () => sessions.delete(transport.sessionId);
      await build().connect(transport);
    }
    if (!transport) {
      res.writeHead(404, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: -32000, message: 'Unknown session' } }));
      return;
    }
    await transport.handleRequest(req, res, body);
  });
  http.listen(port, '127.0.0.1');
}

const at = process.argv.indexOf('--http');
if (at >= 0) {
  await serveHttp(Number(process.argv[at + 1]));
} else {
  // The store's expiry timers would keep the process alive once the client has gone.
  process.stdin.on('end', () => process.exit(0));
  await build().connect(new StdioServerTransport());
}
