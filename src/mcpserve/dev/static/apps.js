// MCP Apps on the dev page: the host side of the apps extension, written for this page.
//
// A tool whose _meta.ui.resourceUri (or the older flat "ui/resourceUri") names a ui://
// resource shows that app while it runs. The page reads the resource over its own
// connection (the era, token and traffic panel of every other request), checks its media
// type, and frames /dev/sandbox.html with an opaque origin; the sandbox's response carries
// the Content-Security-Policy built from the app's declared domains (dev/sandbox.py). When
// the sandbox says it is ready the page hands it the HTML, which it loads into an inner
// iframe, and from then on every message is relayed between the view and the page.
//
// The page answers the view as a host does (JSON-RPC 2.0 over postMessage, protocol
// 2026-01-26): ui/initialize with its capabilities and context, then, once the view says
// ui/notifications/initialized and never before, ui/notifications/tool-input with the
// call's arguments and ui/notifications/tool-result when the call ends (tool-cancelled when
// it fails or is cancelled). The view's tools/call and resources/* requests go to the server
// through the page's connection, questions included (answered on cards here, as for any
// call); a call to a tool whose visibility leaves "app" out, or to a tool this server does
// not list, is refused. ui/message and ui/update-model-context have no model to reach: the
// page shows them. Size changes resize the frame. Before the view goes, the page asks it
// to tear down (ui/resource-teardown) and waits for its answer, a second at most.

import { el, jsonView, pretty } from "./dom.js";
import { inputCard } from "./inputs.js";
import { describeError } from "./wire.js";

export const APPS_EXTENSION = "io.modelcontextprotocol/ui";
export const APP_MIME_TYPE = "text/html;profile=mcp-app";
const PROTOCOL_VERSION = "2026-01-26";
const HOST_INFO = { name: "mcpserve-dev-page", version: "1.0.0" };
const MAX_HEIGHT = 800;
const TEARDOWN_MS = 1000;
const MAX_ROUNDS = 25;
const REFUSED = -32000; // the extension's "implementation-defined" refusal
const FEATURES = { camera: "camera", microphone: "microphone", geolocation: "geolocation",
  clipboardWrite: "clipboard-write" };

// The ui:// URI of the app that shows a tool's results, or null.
export function appUri(tool) {
  const meta = tool?._meta ?? {};
  const uri = meta.ui?.resourceUri ?? meta["ui/resourceUri"];
  return typeof uri === "string" && uri.startsWith("ui://") ? uri : null;
}

// Who may call the tool: ["model", "app"] unless its _meta.ui says otherwise.
export function visibility(tool) {
  const chosen = tool?._meta?.ui?.visibility;
  return Array.isArray(chosen) ? chosen : ["model", "app"];
}

class RPCError extends Error {
  constructor(code, message, data) {
    super(message);
    Object.assign(this, { code, data });
  }
}

export class AppView {
  // wire: the page's connection; tool: the tools/list entry; args: the call's arguments;
  // catalog(): the page's lists ({tools, resources}), for visibility and listed metadata.
  constructor({ wire, tool, args, catalog, roots }) {
    Object.assign(this, { wire, tool, args, catalog, roots });
    this.uri = appUri(tool);
    this.controller = new AbortController();
    this.frame = null;
    this.html = "";
    this.ui = {};
    this.initialized = false;
    this.outcome = null; // what ends the tool's call: ["tool-result", result] or ["tool-cancelled", {reason}]
    this.sent = new Set();
    this.pending = new Map();
    this.nextId = 1;
    this.closed = false;
    this.listener = (event) => this.received(event);
    this.status = el("span", { class: "app-status" }, "Reading the app…");
    this.frameBox = el("div", { class: "app-frame-box" });
    this.events = el("ul", { class: "app-log" });
    this.questions = el("div", { class: "app-questions" });
    this.details = el("div", { class: "app-details" });
    this.element = el("section", { class: "app-view", dataset: { state: "loading", uri: this.uri } },
      el("header", { class: "app-head" }, el("strong", {}, "App "), el("code", {}, this.uri), " ", this.status),
      this.frameBox, this.questions, this.details,
      el("details", { class: "app-events", open: true }, el("summary", {}, "App messages"), this.events));
    // Questions the server asks on a session stream during the view's calls land here.
    this.asker = { over: false, signal: this.controller.signal, ask: (card) => this.questions.append(card.element),
      setState: () => {} };
  }

  setState(name, text) {
    this.element.dataset.state = name;
    this.status.textContent = text;
  }

  note(kind, text, value) {
    this.events.append(el("li", { class: `app-event kind-${kind}`, dataset: { kind } },
      el("code", {}, kind), text ? ` ${text}` : "", value !== undefined ? jsonView(value) : null));
  }

  async start() {
    try {
      const { message } = await this.wire.request("resources/read", { uri: this.uri },
        { signal: this.controller.signal });
      if (message.error) throw new Error(`resources/read failed: ${describeError(message)}`);
      const contents = message.result?.contents ?? [];
      const content = contents.find((item) => item.uri === this.uri) ?? contents[0];
      if (!content) throw new Error("the resource has no contents");
      if (content.mimeType !== APP_MIME_TYPE) {
        throw new Error(`${this.uri} is ${pretty(content.mimeType)}, not ${APP_MIME_TYPE}`);
      }
      this.html = typeof content.text === "string" ? content.text : decodeBase64(content.blob);
      const listed = this.catalog().resources.find((item) => item.uri === this.uri);
      // The content item's _meta.ui wins; the listing's is the fallback.
      this.ui = content._meta?.ui ?? listed?._meta?.ui ?? {};
    } catch (error) {
      if (error.name !== "AbortError") this.setState("failed", `Cannot show the app: ${error.message}`);
      return;
    }
    if (this.closed) return;
    this.details.append(jsonView(this.ui, { summary: "_meta.ui (CSP, permissions, border)" }));
    const allow = Object.keys(this.ui.permissions ?? {}).map((name) => FEATURES[name]).filter(Boolean);
    const query = new URLSearchParams({ csp: JSON.stringify(this.ui.csp ?? {}) });
    this.frame = el("iframe", { class: "app-frame", title: `MCP App ${this.uri}`,
      sandbox: "allow-scripts allow-forms", allow: allow.length ? allow.join("; ") : null,
      src: `/dev/sandbox.html?${query}` });
    this.frameBox.classList.toggle("bordered", this.ui.prefersBorder !== false);
    window.addEventListener("message", this.listener);
    this.frameBox.append(this.frame);
    this.setState("starting", "Starting the view…");
  }

  // The call that opened the app ended (the run says how).
  finished(run) {
    const result = run.reply?.message?.result;
    if (result && !run.reply.message.error && result.resultType !== "input_required") {
      this.outcome = ["ui/notifications/tool-result", result];
    } else {
      const reason = run.reply?.message?.error?.message ?? run.element.dataset.state;
      this.outcome = ["ui/notifications/tool-cancelled", { reason: String(reason ?? "cancelled") }];
    }
    this.flush();
  }

  // Notifications wait for ui/notifications/initialized, and go in order: input, then result.
  flush() {
    if (!this.initialized || this.closed) return;
    if (!this.sent.has("input")) {
      this.sent.add("input");
      this.notify("ui/notifications/tool-input", { arguments: this.args });
    }
    if (this.outcome && !this.sent.has("outcome")) {
      this.sent.add("outcome");
      this.notify(...this.outcome);
      this.setState("ready", this.outcome[0].endsWith("result") ? "Showing the result" : "The call did not complete");
    }
  }

  post(message) {
    this.frame?.contentWindow?.postMessage(message, "*");
  }

  notify(method, params) {
    this.note("host", method);
    this.post({ jsonrpc: "2.0", method, params });
  }

  request(method, params, ms) {
    const id = `host-${this.nextId++}`;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(new Error(`${method}: no answer within ${ms} ms`));
      }, ms);
      this.pending.set(id, (message) => {
        clearTimeout(timer);
        if (message.error) reject(new RPCError(message.error.code, message.error.message));
        else resolve(message.result);
      });
      this.post({ jsonrpc: "2.0", id, method, params });
    });
  }

  received(event) {
    if (!this.frame || event.source !== this.frame.contentWindow) return; // not our view
    const message = event.data;
    if (typeof message !== "object" || message === null || message.jsonrpc !== "2.0") return;
    if (message.method === "ui/notifications/sandbox-proxy-ready") {
      this.post({ jsonrpc: "2.0", method: "ui/notifications/sandbox-resource-ready",
        params: { html: this.html, csp: this.ui.csp ?? {}, permissions: this.ui.permissions ?? {} } });
    } else if (typeof message.method === "string" && message.id !== undefined) {
      this.answer(message);
    } else if (typeof message.method === "string") {
      this.notified(message);
    } else if (this.pending.has(message.id)) {
      const settle = this.pending.get(message.id);
      this.pending.delete(message.id);
      settle(message);
    }
  }

  async answer(request) {
    const handler = REQUESTS[request.method];
    let reply;
    try {
      if (!handler) throw new RPCError(-32601, `Method not found: ${request.method}`);
      reply = { result: await handler.call(this, request.params ?? {}) };
    } catch (error) {
      if (error.name === "AbortError") return; // the view is gone
      reply = { error: { code: Number.isInteger(error.code) ? error.code : -32603, message: String(error.message) } };
      if (error.data !== undefined) reply.error.data = error.data;
      this.note("refused", `${request.method}: ${reply.error.message}`);
    }
    if (!this.closed) this.post({ jsonrpc: "2.0", id: request.id, ...reply });
  }

  notified(message) {
    const params = message.params ?? {};
    if (message.method === "ui/notifications/initialized") {
      this.initialized = true;
      this.note("view", "ui/notifications/initialized");
      this.setState("running", "The view is running");
      this.flush();
    } else if (message.method === "ui/notifications/size-changed") {
      if (Number.isFinite(params.height) && this.frame) {
        this.frame.style.height = `${Math.min(Math.max(Math.ceil(params.height), 24), MAX_HEIGHT)}px`;
      }
    } else if (message.method === "notifications/message") {
      this.note("log", `[${params.level}] ${typeof params.data === "string" ? params.data : JSON.stringify(params.data)}`);
    } else if (message.method === "ui/notifications/request-teardown") {
      this.note("view", "asked to be torn down");
      this.close();
    } else {
      this.note("view", message.method, params);
    }
  }

  hostContext() {
    const width = Math.round(this.frameBox.clientWidth) || undefined;
    return {
      toolInfo: { tool: this.tool },
      theme: "light",
      displayMode: "inline",
      availableDisplayModes: ["inline"],
      containerDimensions: width ? { width, maxHeight: MAX_HEIGHT } : { maxHeight: MAX_HEIGHT },
      locale: navigator.language,
      timeZone: Intl.DateTimeFormat().resolvedOptions().timeZone,
      userAgent: `${HOST_INFO.name}/${HOST_INFO.version}`,
      platform: "web",
      deviceCapabilities: { touch: navigator.maxTouchPoints > 0, hover: matchMedia("(hover: hover)").matches },
    };
  }

  // A request of the view's, to the server through the page's connection; questions the
  // server asks on the way are answered on cards, round after round.
  async forward(method, params) {
    let attempt = params;
    for (let round = 1; round <= MAX_ROUNDS; round++) {
      const { message } = await this.wire.request(method, attempt, { signal: this.controller.signal,
        context: { run: this.asker }, onNotification: (note) => this.note("server", note.method, note.params) });
      if (message.error) throw new RPCError(message.error.code, message.error.message, message.error.data);
      const result = message.result;
      if (result?.resultType !== "input_required") return result;
      const requests = Object.entries(result.inputRequests ?? {});
      const answers = await Promise.all(requests.map(([key, asked]) => {
        const card = inputCard(asked, { key, roots: this.roots, signal: this.controller.signal });
        this.questions.append(card.element);
        return card.answer;
      }));
      attempt = { ...params, inputResponses: Object.fromEntries(requests.map(([key], i) => [key, answers[i]])) };
      if (result.requestState !== undefined) attempt.requestState = result.requestState;
    }
    throw new RPCError(-32603, `Still input_required after ${MAX_ROUNDS} rounds`);
  }

  // Tear the view down: ask it (ui/resource-teardown), wait for its answer (bounded), remove it.
  async close() {
    if (this.closed) return;
    if (this.initialized && this.frame?.isConnected) {
      try {
        await this.request("ui/resource-teardown", {}, TEARDOWN_MS);
      } catch {
        // It did not answer in time, or failed: it goes anyway.
      }
    }
    this.closed = true;
    this.asker.over = true;
    this.controller.abort();
    window.removeEventListener("message", this.listener);
    this.frame?.remove();
    this.frame = null;
    this.setState("closed", "Closed");
  }
}

const REQUESTS = {
  "ui/initialize"(params) {
    this.note("view", `ui/initialize from ${params.appInfo?.name ?? "(unnamed)"} ${params.appInfo?.version ?? ""}`.trim());
    return {
      protocolVersion: PROTOCOL_VERSION,
      hostInfo: HOST_INFO,
      hostCapabilities: {
        openLinks: {},
        serverTools: {},
        serverResources: {},
        logging: {},
        message: { text: {} },
        updateModelContext: { text: {}, structuredContent: {} },
      },
      hostContext: this.hostContext(),
    };
  },

  ping() {
    return {};
  },

  async "tools/call"(params) {
    const name = params?.name;
    const tool = this.catalog().tools.find((candidate) => candidate.name === name);
    if (!tool) throw new RPCError(REFUSED, `The app may not call ${pretty(name)}: this server lists no such tool`);
    if (!visibility(tool).includes("app")) {
      throw new RPCError(REFUSED, `The app may not call ${name}: its visibility is ${visibility(tool).join(", ")}`);
    }
    const result = await this.forward("tools/call", params);
    this.note("call", `tools/call ${name}${result?.isError ? " (isError)" : ""}`);
    return result;
  },

  async "resources/read"(params) {
    this.note("call", `resources/read ${params?.uri}`);
    return this.forward("resources/read", params);
  },

  async "resources/list"(params) {
    return this.forward("resources/list", params);
  },

  async "resources/templates/list"(params) {
    return this.forward("resources/templates/list", params);
  },

  "ui/open-link"(params) {
    const url = String(params?.url ?? "");
    if (!/^https?:\/\//i.test(url)) throw new RPCError(REFUSED, "Only http and https links are opened");
    const opened = window.open(url, "_blank", "noopener,noreferrer");
    this.note("view", `ui/open-link ${url}`);
    return opened === null ? { isError: true } : {};
  },

  "ui/message"(params) {
    this.note("message", "The app would say in the conversation:", params);
    return {};
  },

  "ui/update-model-context"(params) {
    this.note("context", "The app would tell the model:", params);
    return {};
  },

  "ui/request-display-mode"(params) {
    this.note("view", `ui/request-display-mode ${pretty(params?.mode)}: the page shows apps inline`);
    return { mode: "inline" };
  },
};

function decodeBase64(data) {
  if (typeof data !== "string") throw new Error("the resource has neither text nor blob");
  const bytes = Uint8Array.from(atob(data), (char) => char.charCodeAt(0));
  return new TextDecoder().decode(bytes);
}
