// Drives the official TypeScript MCP client (@modelcontextprotocol/client, pinned in
// package.json) for tests/test_cluster.py.
//
// Line-delimited JSON on stdin and stdout: each input line is one command, each output line
// the answer to it, {"ok": true, "result": ...} or {"ok": false, "error": {...}}, in order.
// A line protocol rather than one plan up front, so the Python test can act between steps:
// make a change through another instance, kill one, read where a request landed.
//
// Commands ("op"):
//   connect  {url, mode: "legacy" | "auto", answer}  answer: what elicitation gets back
//   call     {name, arguments}      -> {isError, texts, structured}
//   setLevel {level}                 logging/setLevel (handshake era)
//   subscribe {uri}                  resources/subscribe (handshake era)
//   listen   {uri}                   subscriptions/listen (2026-07-28)  -> honoured filter
//   waitUpdated {uri, timeoutMs}     until notifications/resources/updated for uri arrived
//   take     {}                      -> {logs, updated, asked} seen so far, then forgotten
//   close    {}                      closes the client (a handshake-era DELETE) and exits
// The script is copied next to the installed node_modules and run there (ESM resolves
// packages from the script's own directory).

import { createInterface } from 'node:readline';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';

let client;
let transport;
let subscription;
const seen = { logs: [], updated: [], asked: [] };
let notify = () => {};

function describe(error) {
    return {
        name: error?.constructor?.name ?? typeof error,
        message: String(error?.message ?? error),
        code: error?.code ?? null,
        data: error?.data ?? null
    };
}

async function connect({ url, mode, answer }) {
    client = new Client(
        { name: 'cluster-ts-client', version: '1.0.0' },
        { capabilities: { elicitation: { form: {} } }, versionNegotiation: { mode } }
    );
    client.setRequestHandler('elicitation/create', async request => {
        seen.asked.push(request.params.message);
        return { action: 'accept', content: answer };
    });
    client.setNotificationHandler('notifications/message', notification => {
        seen.logs.push([notification.params.level, notification.params.data]);
        notify();
    });
    client.setNotificationHandler('notifications/resources/updated', notification => {
        seen.updated.push(notification.params.uri);
        notify();
    });
    transport = new StreamableHTTPClientTransport(new URL(url));
    await client.connect(transport);
    const server = client.getServerVersion();
    return {
        era: client.getProtocolEra() ?? null,
        protocolVersion: client.getNegotiatedProtocolVersion() ?? null,
        server: server ? { name: server.name, version: server.version } : null,
        session: transport.sessionId !== undefined
    };
}

async function call({ name, arguments: args }) {
    const result = await client.callTool({ name, arguments: args });
    return {
        isError: result.isError === true,
        texts: result.content.map(block => (block.type === 'text' ? block.text : block.type)),
        structured: result.structuredContent ?? null
    };
}

async function waitUpdated({ uri, timeoutMs }) {
    const deadline = Date.now() + timeoutMs;
    while (!seen.updated.includes(uri)) {
        const left = deadline - Date.now();
        if (left <= 0) throw new Error(`no notifications/resources/updated for ${uri} in ${timeoutMs} ms`);
        await new Promise(resolve => {
            const timer = setTimeout(resolve, left);
            notify = () => {
                clearTimeout(timer);
                resolve();
            };
        });
    }
    return { updated: [...seen.updated] };
}

const commands = {
    connect,
    call,
    setLevel: async ({ level }) => (await client.setLoggingLevel(level), {}),
    subscribe: async ({ uri }) => (await client.subscribeResource({ uri }), {}),
    listen: async ({ uri }) => {
        subscription = await client.listen({ resourceSubscriptions: [uri] });
        return { honored: subscription.honoredFilter };
    },
    waitUpdated,
    take: async () => {
        const taken = { logs: seen.logs.splice(0), updated: seen.updated.splice(0), asked: seen.asked.splice(0) };
        return taken;
    },
    close: async () => {
        if (subscription) await subscription.close();
        if (transport?.sessionId !== undefined) await transport.terminateSession();
        await client.close();
        return {};
    }
};

function reply(answer) {
    process.stdout.write(JSON.stringify(answer) + '\n');
}

const lines = createInterface({ input: process.stdin });
for await (const line of lines) {
    if (!line.trim()) continue;
    const command = JSON.parse(line);
    const handler = commands[command.op];
    try {
        if (!handler) throw new Error(`unknown op ${command.op}`);
        reply({ ok: true, result: await handler(command) });
    } catch (error) {
        reply({ ok: false, error: describe(error) });
    }
    if (command.op === 'close') break;
}
process.exit(0);
