// Drives the official TypeScript MCP client (@modelcontextprotocol/client, pinned in
// package.json) for tests/backends/test_cluster.py and
// tests/auth/test_auth_official_clients.py.
//
// Line-delimited JSON on stdin and stdout: each input line is one command, each output line
// the answer to it, {"ok": true, "result": ...} or {"ok": false, "error": {...}}, in order.
// A line protocol rather than one plan up front, so the Python test can act between steps:
// make a change through another instance, kill one, read where a request landed.
//
// Commands ("op"):
//   connect  {url, mode: "legacy" | "auto", answer, roots?}  answer: what elicitation gets
//            back; roots (a list of {uri, name}): declared, and what roots/list gets back
//   call     {name, arguments}      -> {isError, texts, structured}
//   listTools {}                     -> {names} (tools/list)
//   setLevel {level}                 logging/setLevel (handshake era)
//   subscribe {uri}                  resources/subscribe (handshake era)
//   listen   {uri}                   subscriptions/listen (2026-07-28)  -> honoured filter
//   waitUpdated {uri, timeoutMs}     until notifications/resources/updated for uri arrived
//   take     {}                      -> {logs, updated, asked} seen so far, then forgotten
//   close    {}                      closes the client (a handshake-era DELETE) and exits
// OAuth (the SDK's own auth(): discovery, registration, token requests, 403 step-up):
//   connectOAuth {url, mode, oauth}  like connect, with an authProvider on the transport;
//       oauth.kind "client_credentials": {clientId, clientSecret, issuer}: the SDK's
//         ClientCredentialsProvider (client_secret_basic);
//       oauth.kind "authorization_code": {redirectUrl, clientName, clientId?, issuer?}: an
//         OAuthClientProvider whose redirectToAuthorization only records the URL (the test
//         drives the login and sends finishAuth); with clientId it is pre-registered (a
//         public client), without it registers dynamically.
//       A connect the SDK answers with a redirect fails with UnauthorizedError.
//   finishAuth {callbackUrl}         transport.finishAuth(the callback's query parameters);
//                                    then, if the last connect failed, connects again (a new
//                                    Client and transport, the same provider) -> connect's answer
//   oauth    {}                      -> {authorizationUrls, scope, accessTokens, clientId,
//                                    exchanges}: scope of the current token, every access token
//                                    saved, every HTTP exchange the transport and auth() made
//                                    ({method, url, status, bearer, wwwAuthenticate, mcpMethod,
//                                    form}; form: the body of a non-MCP POST)
// The script is copied next to the installed node_modules and run there (ESM resolves
// packages from the script's own directory).

import { createInterface } from 'node:readline';
import { Client, ClientCredentialsProvider, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';

let client;
let transport;
let oauth; // {options, provider, exchanges, connected} of connectOAuth
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

function newClient(mode, answer, roots) {
    const capabilities = { elicitation: { form: {} } };
    if (roots !== undefined) capabilities.roots = {};
    const made = new Client({ name: 'cluster-ts-client', version: '1.0.0' }, { capabilities, versionNegotiation: { mode } });
    made.setRequestHandler('elicitation/create', async request => {
        seen.asked.push(request.params.message);
        return { action: 'accept', content: answer };
    });
    if (roots !== undefined) {
        made.setRequestHandler('roots/list', async () => {
            seen.asked.push('roots/list');
            return { roots };
        });
    }
    made.setNotificationHandler('notifications/message', notification => {
        seen.logs.push([notification.params.level, notification.params.data]);
        notify();
    });
    made.setNotificationHandler('notifications/resources/updated', notification => {
        seen.updated.push(notification.params.uri);
        notify();
    });
    return made;
}

function connected() {
    const server = client.getServerVersion();
    return {
        era: client.getProtocolEra() ?? null,
        protocolVersion: client.getNegotiatedProtocolVersion() ?? null,
        server: server ? { name: server.name, version: server.version } : null,
        session: transport.sessionId !== undefined
    };
}

async function connect({ url, mode, answer, roots }) {
    client = newClient(mode, answer, roots);
    transport = new StreamableHTTPClientTransport(new URL(url));
    await client.connect(transport);
    return connected();
}

// An interactive OAuthClientProvider whose "browser" is the Python test: the authorization URL
// is recorded for it, and the code comes back through finishAuth.
class RecordingProvider {
    constructor({ redirectUrl, clientName, clientId, issuer }) {
        this._redirectUrl = redirectUrl;
        this._clientName = clientName;
        this._clientInformation = clientId ? { client_id: clientId, issuer } : undefined;
        this.authorizationUrls = [];
    }
    get redirectUrl() {
        return this._redirectUrl;
    }
    get clientMetadata() {
        return {
            client_name: this._clientName,
            redirect_uris: [this._redirectUrl],
            grant_types: ['authorization_code', 'refresh_token'],
            response_types: ['code'],
            token_endpoint_auth_method: 'none'
        };
    }
    clientInformation() {
        return this._clientInformation;
    }
    saveClientInformation(information) {
        this._clientInformation = information;
    }
    tokens() {
        return this._tokens;
    }
    saveTokens(tokens) {
        this._tokens = tokens;
    }
    redirectToAuthorization(url) {
        this.authorizationUrls.push(url.href);
    }
    saveCodeVerifier(verifier) {
        this._codeVerifier = verifier;
    }
    codeVerifier() {
        return this._codeVerifier;
    }
    saveDiscoveryState(state) {
        this._discoveryState = state;
    }
    discoveryState() {
        return this._discoveryState;
    }
}

function makeProvider(options) {
    if (options.kind === 'client_credentials') {
        return new ClientCredentialsProvider({
            clientId: options.clientId,
            clientSecret: options.clientSecret,
            expectedIssuer: options.issuer
        });
    }
    if (options.kind === 'authorization_code') return new RecordingProvider(options);
    throw new Error(`unknown oauth.kind ${options.kind}`);
}

// fetch, recording each exchange (never a token: only whether a bearer token was sent).
function recordingFetch(mcpUrl, exchanges) {
    return async (input, init = {}) => {
        const url = String(input instanceof Request ? input.url : input);
        const method = init.method ?? (input instanceof Request ? input.method : 'GET');
        const headers = new Headers(init.headers ?? (input instanceof Request ? input.headers : undefined));
        const exchange = { method, url, bearer: /^bearer /i.test(headers.get('authorization') ?? '') };
        if (url === mcpUrl && typeof init.body === 'string') {
            exchange.mcpMethod = JSON.parse(init.body).method ?? null;
        } else if (init.body instanceof URLSearchParams) {
            exchange.form = Object.fromEntries(init.body);
        } else if (typeof init.body === 'string') {
            exchange.form = init.body;
        }
        const response = await fetch(input, init);
        exchange.status = response.status;
        exchange.wwwAuthenticate = response.headers.get('www-authenticate');
        exchanges.push(exchange);
        return response;
    };
}

async function oauthConnect() {
    const { url, mode } = oauth.options;
    client = newClient(mode, undefined);
    transport = new StreamableHTTPClientTransport(new URL(url), {
        authProvider: oauth.provider,
        fetch: recordingFetch(new URL(url).href, oauth.exchanges)
    });
    oauth.connected = false;
    await client.connect(transport);
    oauth.connected = true;
    return connected();
}

async function connectOAuth(options) {
    const provider = makeProvider(options.oauth);
    const accessTokens = [];
    const saveTokens = provider.saveTokens.bind(provider);
    provider.saveTokens = (tokens, context) => {
        accessTokens.push(tokens.access_token);
        return saveTokens(tokens, context);
    };
    oauth = { options, provider, accessTokens, exchanges: [], connected: false };
    return oauthConnect();
}

async function finishAuth({ callbackUrl }) {
    await transport.finishAuth(new URL(callbackUrl).searchParams);
    if (oauth.connected) return {};
    await client.close().catch(() => {});
    return oauthConnect();
}

async function oauthState() {
    const tokens = await oauth.provider.tokens();
    const information = await oauth.provider.clientInformation();
    return {
        authorizationUrls: [...(oauth.provider.authorizationUrls ?? [])],
        scope: tokens?.scope ?? null,
        accessTokens: [...oauth.accessTokens],
        clientId: information?.client_id ?? null,
        exchanges: [...oauth.exchanges]
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
    connectOAuth,
    finishAuth,
    oauth: oauthState,
    call,
    listTools: async () => ({ names: (await client.listTools()).tools.map(tool => tool.name) }),
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
