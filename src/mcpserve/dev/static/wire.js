// The page's MCP client: JSON-RPC over fetch() to the server's real endpoint, in either era.
//
// 2026-07-28 ("modern"): every request stands alone. Its params carry the full _meta
// (protocol version, client info and capabilities, log level, progress token) and its
// headers mirror the body, as the spec asks so that proxies can route without parsing JSON:
// MCP-Protocol-Version, Mcp-Method, Mcp-Name (the tool, prompt or resource named) and
// Mcp-Param-* (the arguments a tool's schema marks with x-mcp-header), base64-wrapped when
// a value is not plain visible ASCII. The answer is JSON, or an SSE stream whose
// notifications (progress, log) arrive before the response. A question for the user comes
// back as an input_required result; the caller retries with inputResponses + requestState.
//
// 2025-11-25 ("handshake"): initialize starts a session; later POSTs carry Mcp-Session-Id
// and the negotiated MCP-Protocol-Version. The server's questions are JSON-RPC requests on
// the request's SSE stream (or the session's GET stream), answered by POSTing a JSON-RPC
// response. A session the server no longer knows (404) is started again, once.
//
// Every exchange is reported to onTraffic as it happens: the page shows what was on the wire.

export const MODERN = "2026-07-28";
export const HANDSHAKE = "2025-11-25";
export const CLIENT_INFO = { name: "mcpserve-dev-page", version: "1.0.0" };
// The page renders MCP Apps (apps.js), and says so in both eras; on 2026-07-28 it also
// follows tasks (runs.js), so a server may answer a call with one.
const APPS = { "io.modelcontextprotocol/ui": { mimeTypes: ["text/html;profile=mcp-app"] } };
const TASKS = { "io.modelcontextprotocol/tasks": {} };
const CAPABILITIES = {
  modern: { elicitation: { form: {}, url: {} }, sampling: {}, roots: {},
    extensions: { ...APPS, ...TASKS } },
  handshake: { elicitation: { form: {}, url: {} }, sampling: {}, roots: { listChanged: true },
    extensions: APPS },
};
const META = "io.modelcontextprotocol/";
const NAME_SOURCES = { "tools/call": "name", "prompts/get": "name", "resources/read": "uri",
  "tasks/get": "taskId", "tasks/update": "taskId", "tasks/cancel": "taskId" };
const SHOWN_HEADERS = ["content-type", "mcp-session-id", "www-authenticate", "allow"];
let exchanges = 0;

export class Wire {
  constructor({ endpoint = "/mcp", era = "modern", token = "", logLevel = null,
    onTraffic = () => {}, onServerRequest = null, onNotification = () => {} } = {}) {
    Object.assign(this, { endpoint, era, token, logLevel, onTraffic, onServerRequest,
      onNotification });
    this.nextId = 1;
    this.session = null; // handshake era: the Mcp-Session-Id initialize gave
    this.version = era === "modern" ? MODERN : HANDSHAKE;
    this.info = null;
  }

  get capabilities() {
    return CAPABILITIES[this.era];
  }

  // Learn who the server is: server/discover (modern) or the handshake.
  async open() {
    if (this.era !== "modern") return this.initialize();
    const { message } = await this.request("server/discover", {});
    if (message.error) throw new Error(`server/discover failed: ${describeError(message)}`);
    const result = message.result;
    this.info = {
      protocolVersion: MODERN,
      serverInfo: result._meta?.[`${META}serverInfo`] ?? null,
      capabilities: result.capabilities ?? {},
      instructions: result.instructions ?? "",
      supportedVersions: result.supportedVersions ?? [],
    };
    return this.info;
  }

  async initialize() {
    this.session = null;
    const message = { jsonrpc: "2.0", id: this.nextId++, method: "initialize",
      params: { protocolVersion: HANDSHAKE, capabilities: this.capabilities,
        clientInfo: CLIENT_INFO } };
    const reply = await this.exchange(message);
    if (!reply.message || reply.message.error) {
      throw new Error(`initialize failed: ${reply.message ? describeError(reply.message) : reply.status}`);
    }
    const result = reply.message.result;
    this.session = reply.headers.get("mcp-session-id");
    this.version = result.protocolVersion;
    this.info = {
      protocolVersion: result.protocolVersion,
      serverInfo: result.serverInfo ?? null,
      capabilities: result.capabilities ?? {},
      instructions: result.instructions ?? "",
      session: this.session,
    };
    await this.notify("notifications/initialized");
    if (this.logLevel && this.info.capabilities.logging) await this.setLogLevel(this.logLevel);
    return this.info;
  }

  // One request; resolves to {message, status, headers} once its response arrives.
  // options: progress (ask for progress), headers (extra), signal, onNotification, context.
  async request(method, params = {}, options = {}) {
    const id = this.nextId++;
    const body = { ...params };
    const token = options.progress ? `dev-${id}` : null;
    if (this.era === "modern") body._meta = { ...(params._meta || {}), ...this.meta(token) };
    else if (token) body._meta = { ...(params._meta || {}), progressToken: token };
    const reply = await this.exchange({ jsonrpc: "2.0", id, method, params: body }, options);
    if (this.era === "handshake" && reply.status === 404 && !options.again && method !== "initialize") {
      await this.initialize(); // the server forgot the session: start a new one, once
      return this.request(method, params, { ...options, again: true });
    }
    if (!reply.message) throw new Error(`HTTP ${reply.status}: ${reply.text || "no JSON-RPC answer"}`);
    return reply;
  }

  meta(progressToken) {
    const meta = {
      [`${META}protocolVersion`]: MODERN,
      [`${META}clientInfo`]: CLIENT_INFO,
      [`${META}clientCapabilities`]: this.capabilities,
    };
    if (this.logLevel) meta[`${META}logLevel`] = this.logLevel;
    if (progressToken) meta.progressToken = progressToken;
    return meta;
  }

  async notify(method, params) {
    const message = { jsonrpc: "2.0", method };
    if (params) message.params = params;
    return this.exchange(message);
  }

  async setLogLevel(level) {
    this.logLevel = level || null;
    // Modern requests carry the level in _meta; a session is told once.
    if (this.era === "handshake" && this.session && level) {
      return this.request("logging/setLevel", { level });
    }
    return null;
  }

  headersFor(message, extra = {}) {
    const headers = { "Content-Type": "application/json",
      Accept: "application/json, text/event-stream" };
    if (this.token) headers.Authorization = `Bearer ${this.token}`;
    if (this.era === "modern") {
      headers["MCP-Protocol-Version"] = MODERN;
      if (message.method) headers["Mcp-Method"] = message.method;
      const key = NAME_SOURCES[message.method];
      const name = key ? message.params?.[key] : undefined;
      if (typeof name === "string") headers["Mcp-Name"] = headerValue(name);
    } else if (this.session) {
      headers["Mcp-Session-Id"] = this.session;
      headers["MCP-Protocol-Version"] = this.version;
    }
    return { ...headers, ...extra };
  }

  // POST one message and read its answer: JSON, an SSE stream, or nothing (202).
  async exchange(message, options = {}) {
    const headers = this.headersFor(message, options.headers);
    const entry = { n: ++exchanges, time: new Date(), era: this.era, verb: "POST",
      label: message.method ?? `response to ${JSON.stringify(message.id)}`,
      headers, sent: message, status: null, responseHeaders: {}, received: [], error: null };
    this.onTraffic(entry);
    const isRequest = message.method !== undefined && message.id !== undefined;
    if (isRequest && this.era === "handshake" && options.signal) {
      // Closing the stream does not cancel a session's request: say so, as the spec asks.
      options.signal.addEventListener("abort", () => {
        this.notify("notifications/cancelled", { requestId: message.id,
          reason: "Cancelled in the dev page" }).catch(() => {});
      }, { once: true });
    }
    try {
      const response = await fetch(this.endpoint, { method: "POST", headers,
        body: JSON.stringify(message), signal: options.signal });
      const reply = { status: response.status, headers: response.headers, message: null, text: "" };
      entry.status = response.status;
      entry.responseHeaders = pickHeaders(response.headers);
      this.onTraffic(entry);
      const type = response.headers.get("content-type") || "";
      if (type.startsWith("text/event-stream")) {
        for await (const received of sseMessages(response.body)) {
          entry.received.push(received);
          this.onTraffic(entry);
          if (this.dispatch(received, options) && received.id === message.id) {
            reply.message = received;
            break;
          }
        }
        if (!reply.message && isRequest) throw new Error("The SSE stream ended before the response");
      } else if (type.includes("json")) {
        reply.message = await response.json();
        entry.received.push(reply.message);
      } else {
        reply.text = (await response.text()).slice(0, 300);
        if (reply.text) entry.received.push(reply.text);
      }
      this.onTraffic(entry);
      return reply;
    } catch (error) {
      entry.error = error.name === "AbortError" ? "aborted" : String(error.message || error);
      this.onTraffic(entry);
      throw error;
    }
  }

  // One message from a stream. Returns true for a response (the caller matches its id).
  dispatch(received, options = {}) {
    if (typeof received !== "object" || received === null) return false;
    if (received.method === undefined) return "id" in received;
    if (received.id !== undefined) this.serve(received, options.context);
    else if (options.onNotification) options.onNotification(received);
    else this.onNotification(received);
    return false;
  }

  // Answer a request the server sent us (handshake era) with what onServerRequest decides.
  async serve(request, context) {
    let answer;
    try {
      if (request.method === "ping") answer = { result: {} };
      else if (!this.onServerRequest) throw new Error(`The page cannot answer ${request.method}`);
      else answer = { result: await this.onServerRequest(request, context) };
    } catch (error) {
      answer = { error: { code: -1, message: String(error?.message || error) } };
    }
    try {
      await this.exchange({ jsonrpc: "2.0", id: request.id, ...answer });
    } catch {
      // The traffic panel already shows the failed POST; nothing else waits for it.
    }
  }

  // Handshake era: the session's own stream (GET), where notifications not tied to a
  // request arrive. Runs until the signal aborts or the server ends it.
  async sessionStream(signal, onNotification) {
    const headers = { Accept: "text/event-stream", "Mcp-Session-Id": this.session,
      "MCP-Protocol-Version": this.version };
    if (this.token) headers.Authorization = `Bearer ${this.token}`;
    const entry = { n: ++exchanges, time: new Date(), era: this.era, verb: "GET",
      label: "session stream", headers, sent: null, status: null, responseHeaders: {},
      received: [], error: null };
    this.onTraffic(entry);
    try {
      const response = await fetch(this.endpoint, { method: "GET", headers, signal });
      entry.status = response.status;
      entry.responseHeaders = pickHeaders(response.headers);
      this.onTraffic(entry);
      if (!response.ok) throw new Error(`GET stream refused: HTTP ${response.status}`);
      for await (const received of sseMessages(response.body)) {
        entry.received.push(received);
        this.onTraffic(entry);
        this.dispatch(received, { onNotification });
      }
    } catch (error) {
      entry.error = error.name === "AbortError" ? "closed" : String(error.message || error);
      this.onTraffic(entry);
      if (error.name !== "AbortError") throw error;
    }
  }

  // End the session (handshake era); a modern wire has nothing to end.
  async close() {
    if (this.era !== "handshake" || !this.session) return;
    const headers = { "Mcp-Session-Id": this.session, "MCP-Protocol-Version": this.version };
    if (this.token) headers.Authorization = `Bearer ${this.token}`;
    this.session = null;
    const entry = { n: ++exchanges, time: new Date(), era: this.era, verb: "DELETE",
      label: "end the session", headers, sent: null, status: null, responseHeaders: {},
      received: [], error: null };
    this.onTraffic(entry);
    try {
      const response = await fetch(this.endpoint, { method: "DELETE", headers, keepalive: true });
      entry.status = response.status;
    } catch (error) {
      entry.error = String(error.message || error); // the server ends idle sessions anyway
    }
    this.onTraffic(entry);
  }
}

// The messages of an SSE body, one JSON-RPC message per event with data. Priming events
// (an id with empty data) and comments (keep-alives) carry none and are skipped.
export async function* sseMessages(body) {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buffer += value.replace(/\r\n?/g, "\n"); // servers may end lines with CR LF or CR
      let cut;
      while ((cut = buffer.indexOf("\n\n")) !== -1) {
        const event = buffer.slice(0, cut);
        buffer = buffer.slice(cut + 2);
        const data = event.split("\n").filter((line) => line.startsWith("data:"))
          .map((line) => line.slice(line.startsWith("data: ") ? 6 : 5)).join("\n");
        if (data.trim()) yield JSON.parse(data);
      }
    }
  } finally {
    reader.cancel().catch(() => {});
  }
}

// A header value as the spec writes it: as is when plain visible ASCII (no edge
// whitespace), otherwise =?base64?<UTF-8 in base64>?= (so is a value that looks like one).
export function headerValue(text) {
  const plain = text === "" || /^[\x21-\x7e](?:[\x20-\x7e]*[\x21-\x7e])?$/.test(text);
  if (plain && !(text.startsWith("=?base64?") && text.endsWith("?="))) return text;
  let binary = "";
  for (const byte of new TextEncoder().encode(text)) binary += String.fromCharCode(byte);
  return `=?base64?${btoa(binary)}?=`;
}

// Mcp-Param-* headers for a tools/call: each argument the tool marks with x-mcp-header.
export function paramHeaders(tool, args) {
  const headers = {};
  const properties = tool?.inputSchema?.properties ?? {};
  for (const [name, schema] of Object.entries(properties)) {
    const header = schema?.["x-mcp-header"];
    const value = args?.[name];
    if (typeof header !== "string" || value === undefined || value === null) continue;
    headers[`Mcp-Param-${header}`] = headerValue(typeof value === "string" ? value : JSON.stringify(value));
  }
  return headers;
}

export function describeError(message) {
  const error = message?.error;
  if (!error) return "";
  return `${error.code ?? "?"} ${error.message ?? ""}`.trim();
}

function pickHeaders(headers) {
  const shown = {};
  for (const name of SHOWN_HEADERS) {
    const value = headers.get(name);
    if (value !== null) shown[name] = value;
  }
  return shown;
}
