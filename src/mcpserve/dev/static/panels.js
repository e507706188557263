// The side panels: subscriptions, roots, messages and the wire traffic.
//
// Subscriptions: in 2026-07-28 one long-lived subscriptions/listen request whose SSE stream
// brings the acknowledgement (what the server agreed to send) and then each notification;
// Stop closes the stream, which ends it. In the handshake era a session hears its changes
// on its GET stream, and resources are subscribed with resources/subscribe; the checkboxes
// then only filter what is shown, since a session is sent every list change. A list change
// refreshes that list in the page either way.
//
// Traffic: every exchange the Wire makes, newest first, with the headers and bodies sent
// and every message received; an open entry updates as its stream delivers.

import { clear, el, jsonView, pretty, timeOfDay } from "./dom.js";
import { readRoots, rootRow } from "./inputs.js";

const KEEP = 150;
const LIST_CHANGES = {
  "notifications/tools/list_changed": ["tools", "toolsListChanged"],
  "notifications/prompts/list_changed": ["prompts", "promptsListChanged"],
  "notifications/resources/list_changed": ["resources", "resourcesListChanged"],
};

export class Subscriptions {
  constructor(root, { wire, onListChanged }) {
    Object.assign(this, { root, wire, onListChanged });
    this.controller = null;
    this.subscribed = [];
    const box = (id, label) => el("label", { class: "choice" },
      el("input", { type: "checkbox", id, checked: true }), ` ${label}`);
    this.boxes = { toolsListChanged: box("sub-tools", "tools list changed"),
      promptsListChanged: box("sub-prompts", "prompts list changed"),
      resourcesListChanged: box("sub-resources", "resources list changed") };
    this.uris = el("textarea", { id: "sub-uris", rows: "2", placeholder: "Resource URIs, one per line" });
    this.status = el("p", { id: "sub-status", class: "muted", dataset: { state: "idle" } }, "Not listening.");
    this.events = el("ol", { id: "sub-events", class: "events" });
    this.startButton = el("button", { type: "button", id: "listen", class: "primary", onclick: () => this.start() }, "Listen");
    this.stopButton = el("button", { type: "button", id: "unlisten", disabled: true, onclick: () => this.stop() }, "Stop");
    root.append(el("div", { class: "choices" }, Object.values(this.boxes)),
      el("label", { for: "sub-uris" }, "Resource subscriptions"), this.uris,
      el("div", { class: "buttons" }, this.startButton, this.stopButton), this.status, this.events);
  }

  addUri(uri) {
    const uris = this.uris.value.split("\n").map((line) => line.trim()).filter(Boolean);
    if (!uris.includes(uri)) this.uris.value = [...uris, uri].join("\n");
    if (this.controller) this.start(); // listening: listen again with the new filter
  }

  filter() {
    const filter = {};
    for (const [key, label] of Object.entries(this.boxes)) {
      if (label.querySelector("input").checked) filter[key] = true;
    }
    const uris = this.uris.value.split("\n").map((line) => line.trim()).filter(Boolean);
    if (uris.length) filter.resourceSubscriptions = uris;
    return filter;
  }

  setStatus(state, text) {
    this.status.dataset.state = state;
    this.status.textContent = text;
    this.startButton.textContent = this.controller ? "Listen again" : "Listen";
    this.stopButton.disabled = !this.controller;
  }

  async start() {
    await this.stop();
    const wire = this.wire();
    if (!wire) return this.setStatus("idle", "Not connected.");
    const controller = new AbortController();
    this.controller = controller;
    const filter = this.filter();
    const ended = (text) => {
      if (this.controller !== controller) return;
      this.controller = null;
      this.setStatus("ended", text);
    };
    if (wire.era === "modern") {
      this.setStatus("starting", "Sending subscriptions/listen…");
      wire.request("subscriptions/listen", { notifications: filter },
        { signal: controller.signal, onNotification: (message) => this.event(message, filter) })
        .then(({ message }) => ended(message.error
          ? `The server refused: ${message.error.message}` : "The server ended the subscription."))
        .catch((error) => ended(error.name === "AbortError" ? "Stopped." : `Failed: ${error.message}`));
      return undefined;
    }
    this.setStatus("starting", "Opening the session stream…");
    this.subscribed = filter.resourceSubscriptions ?? [];
    for (const uri of this.subscribed) {
      const { message } = await wire.request("resources/subscribe", { uri });
      if (message.error) this.note(`resources/subscribe ${uri}: ${message.error.message}`);
    }
    if (this.controller !== controller) return undefined;
    this.setStatus("listening", "Listening on the session's GET stream (a session hears every list change; the boxes filter what is shown).");
    wire.sessionStream(controller.signal, (message) => this.event(message, filter))
      .then(() => ended("The server closed the session stream."))
      .catch((error) => ended(`Failed: ${error.message}`));
    return undefined;
  }

  async stop() {
    const controller = this.controller;
    if (!controller) return;
    this.controller = null;
    controller.abort();
    const wire = this.wire();
    const uris = this.subscribed;
    this.subscribed = [];
    if (wire?.era === "handshake") {
      for (const uri of uris) await wire.request("resources/unsubscribe", { uri }).catch(() => {});
    }
    this.setStatus("idle", "Stopped.");
  }

  event(message, filter) {
    if (message.method === "notifications/subscriptions/acknowledged") {
      const id = message.params?._meta?.["io.modelcontextprotocol/subscriptionId"];
      this.setStatus("listening", `Listening (subscription ${JSON.stringify(id)}).`);
      this.events.prepend(eventItem(message, "Acknowledged: the server will send"));
      return;
    }
    const change = LIST_CHANGES[message.method];
    if (change && !filter[change[1]]) return; // the handshake era sends all; show what was asked
    this.events.prepend(eventItem(message));
    trim(this.events);
    if (change) this.onListChanged(change[0]);
  }

  note(text) {
    this.events.prepend(el("li", { class: "event muted" }, text));
  }
}

function eventItem(message, title) {
  return el("li", { class: "event", dataset: { method: String(message.method) } },
    el("span", { class: "time" }, timeOfDay()), " ", el("code", {}, String(message.method)),
    title ? el("div", { class: "muted" }, title) : null,
    jsonView(message.params ?? {}, { className: "event-params" }));
}

export class Roots {
  constructor(root, { onChange }) {
    this.list = el("ul", { id: "roots-list", class: "roots-edit" });
    this.onChange = onChange;
    root.append(el("p", { class: "muted" },
      "Offered when the server asks for roots; you confirm (and may edit) them each time."),
    this.list, el("button", { type: "button", id: "add-root", class: "small",
      onclick: () => this.add() }, "Add root"));
  }

  add(root = { uri: "", name: "" }) {
    this.list.append(rootRow(root, this.onChange));
  }

  roots() {
    return readRoots(this.list);
  }
}

// Messages that belong to no call: notifications on other streams, and questions the
// server asked on the session stream.
export class Messages {
  constructor(root) {
    this.list = el("ol", { id: "messages-list", class: "events" });
    root.append(el("button", { type: "button", class: "small", onclick: () => clear(this.list) }, "Clear"), this.list);
  }

  add(message) {
    this.list.prepend(eventItem(message));
    trim(this.list);
  }

  addCard(card) {
    this.list.prepend(el("li", { class: "event" }, card));
  }
}

export class Traffic {
  constructor(root) {
    this.list = el("ol", { id: "traffic-list", class: "events" });
    this.items = new Map();
    root.append(el("button", { type: "button", class: "small",
      onclick: () => { clear(this.list); this.items.clear(); } }, "Clear"), this.list);
  }

  record(entry) {
    let item = this.items.get(entry.n);
    if (!item) {
      const summary = el("summary", {});
      const body = el("div", { class: "exchange-body" });
      item = { entry, summary, body, node: el("details", { class: "exchange", dataset: { n: String(entry.n) },
        ontoggle: () => this.fill(item) }, summary, body) };
      this.items.set(entry.n, item);
      this.list.prepend(el("li", {}, item.node));
      while (this.items.size > KEEP) {
        const [oldest] = this.items.keys();
        this.items.get(oldest).node.parentElement?.remove();
        this.items.delete(oldest);
      }
    }
    item.entry = entry;
    const status = entry.error ? ` ✗ ${entry.error}` : entry.status === null ? " …" : ` → ${entry.status}`;
    const kind = (entry.responseHeaders["content-type"] || "").startsWith("text/event-stream") ? " SSE" : "";
    const count = entry.received.length > 1 ? ` (${entry.received.length} messages)` : "";
    item.summary.textContent = `${timeOfDay(entry.time)} ${entry.verb} ${entry.label}${status}${kind}${count}`;
    item.node.classList.toggle("failed", Boolean(entry.error) || entry.status >= 400);
    if (item.node.open) this.fill(item);
  }

  fill(item) {
    if (!item.node.open) return;
    const { entry } = item;
    clear(item.body).append(
      el("h5", {}, `${entry.verb} request headers (${entry.era} wire)`), el("pre", { class: "json" }, pretty(entry.headers)),
      entry.sent ? el("h5", {}, "Body sent") : null, entry.sent ? el("pre", { class: "json" }, pretty(entry.sent)) : null,
      el("h5", {}, "Response headers"), el("pre", { class: "json" }, pretty(entry.responseHeaders)),
      el("h5", {}, "Received"), ...entry.received.map((message) => el("pre", { class: "json" }, pretty(message))));
  }
}

function trim(list) {
  while (list.children.length > KEEP) list.lastElementChild.remove();
}
