// The dev page: what the server offers, forms to try it, and what came back.
//
// connect() opens a Wire in the chosen era (server/discover, or initialize) and fetches the
// four lists, every page of each. Picking an item shows a form generated from its schema
// and a run area. A run sends the request and shows, live, the notifications on its stream
// (progress bars, log lines), then the result. When the server needs input the run shows a
// card per question: in 2026-07-28 the answers go into a retry of the same request
// (inputResponses + requestState), round after round until the result is complete; in the
// handshake era each answer is POSTed back as it is given. Switching the era ends the
// session, if any, and connects again: the same server, seen by both kinds of client.
// A tool with an MCP App shows it in the run while the call goes on (apps.js).

import { APP_MIME_TYPE, AppView, appUri, visibility } from "./apps.js";
import { clear, el, jsonView, pretty } from "./dom.js";
import { argumentsForm, expandTemplate, schemaForm, templateVariables } from "./forms.js";
import { attachCompletions } from "./completions.js";
import { inputCard } from "./inputs.js";
import { Messages, Roots, Subscriptions, Traffic } from "./panels.js";
import { perform, Run } from "./runs.js";
import { describeError, Wire } from "./wire.js";

const $ = (selector) => document.querySelector(selector);
const ENDPOINT = $('meta[name="mcp-endpoint"]')?.content || "/mcp";
const LISTS = {
  tools: { method: "tools/list", key: "tools", capability: "tools", id: (item) => item.name },
  resources: { method: "resources/list", key: "resources", capability: "resources", id: (item) => item.uri },
  templates: { method: "resources/templates/list", key: "resourceTemplates", capability: "resources",
    id: (item) => item.uriTemplate },
  prompts: { method: "prompts/list", key: "prompts", capability: "prompts", id: (item) => item.name },
};
const state = { wire: null, info: null, generation: 0, run: null, app: null, selected: null,
  catalog: { tools: [], resources: [], templates: [], prompts: [] } };

// The detail's empty state (server instructions and capabilities), shown again on connect.
const EMPTY = $("#detail-empty");
const ABOUT = $("#server-about");
const traffic = new Traffic($("#traffic"));
const messages = new Messages($("#messages"));
const roots = new Roots($("#roots"), { onChange: debounce(rootsChanged, 400) });
const subscriptions = new Subscriptions($("#subscriptions"),
  { wire: () => state.wire, onListChanged: (kind) => refreshList(kind) });

function setStatus(name, text) {
  document.body.dataset.status = name;
  $("#status").textContent = text;
}

async function connect() {
  const generation = ++state.generation;
  await subscriptions.stop();
  state.run?.cancel();
  closeApp();
  const previous = state.wire;
  state.wire = null;
  state.selected = null;
  clear($("#detail")).append(EMPTY); // what was picked belongs to the previous connection
  clear(ABOUT);
  await previous?.close();
  const era = $("#era").value;
  setStatus("connecting", `Connecting over the ${era === "modern" ? "2026-07-28" : "handshake-era"} wire…`);
  const wire = new Wire({ endpoint: ENDPOINT, era, token: $("#token").value.trim(),
    logLevel: $("#log-level").value || null, onTraffic: (entry) => traffic.record(entry),
    onServerRequest: answerServerRequest, onNotification: (message) => messages.add(message) });
  try {
    const info = await wire.open();
    if (generation !== state.generation) return void wire.close();
    state.wire = wire;
    state.info = info;
    showServer(info);
    await refreshAll();
    if (generation === state.generation) setStatus("ready", `Connected: ${describeConnection(info)}`);
  } catch (error) {
    if (generation === state.generation) setStatus("failed", `Cannot connect: ${error.message}`);
  }
}

function describeConnection(info) {
  return info.session ? `${info.protocolVersion}, session ${info.session}` : `${info.protocolVersion}, stateless`;
}

function showServer(info) {
  const server = info.serverInfo ?? {};
  $("#server-name").textContent = server.title || server.name || "(unnamed server)";
  $("#server-version").textContent = server.version ? `v${server.version}` : "";
  const logging = Boolean(info.capabilities.logging);
  $("#log-level").disabled = !logging;
  if (!logging) state.wire.logLevel = null;
  const about = clear(ABOUT);
  if (info.instructions) about.append(el("h3", {}, "Instructions"), el("p", { class: "instructions" }, info.instructions));
  about.append(jsonView(info.capabilities, { summary: "Server capabilities" }));
}

async function refreshAll() {
  await Promise.all(Object.keys(LISTS).map((kind) => refreshList(kind)));
}

async function refreshList(kind) {
  const spec = LISTS[kind];
  const wire = state.wire;
  if (!wire) return;
  if (!state.info.capabilities[spec.capability]) return renderList(kind, "Not offered by this server");
  const items = [];
  let cursor;
  try {
    for (let page = 0; page < 100; page++) {
      const { message } = await wire.request(spec.method, cursor ? { cursor } : {});
      if (message.error) throw new Error(describeError(message));
      items.push(...(message.result?.[spec.key] ?? []));
      cursor = message.result?.nextCursor;
      if (!cursor) break;
    }
  } catch (error) {
    if (wire === state.wire) renderList(kind, `Cannot list: ${error.message}`);
    return undefined;
  }
  if (wire !== state.wire) return undefined;
  state.catalog[kind] = items;
  return renderList(kind);
}

function renderList(kind, problem = null) {
  const list = clear($(`#${kind}-list`));
  const items = problem ? [] : state.catalog[kind];
  if (problem) state.catalog[kind] = [];
  $(`#${kind}-count`).textContent = problem ? "" : String(items.length);
  if (problem) list.append(el("li", { class: "muted" }, problem));
  else if (!items.length) list.append(el("li", { class: "muted" }, "None"));
  for (const item of items) {
    const id = LISTS[kind].id(item);
    list.append(el("li", {}, el("button", { type: "button", class: "item", dataset: { kind, name: id },
      title: item.description ?? "", onclick: () => select(kind, id) },
    el("span", { class: "item-name" }, item.title || item.name || id,
      kind === "tools" && appUri(item) ? el("span", { class: "item-tag" }, "app") : null),
    kind === "resources" || kind === "templates" ? el("span", { class: "item-sub" }, id) : null)));
  }
  list.dataset.loaded = "true";
  markSelected();
}

function markSelected() {
  for (const button of document.querySelectorAll("#catalog button.item")) {
    const on = state.selected?.kind === button.dataset.kind && state.selected?.id === button.dataset.name;
    button.classList.toggle("selected", on);
    button.setAttribute("aria-pressed", String(on));
  }
}

function select(kind, id) {
  const item = state.catalog[kind].find((candidate) => LISTS[kind].id(candidate) === id);
  if (!item) return;
  state.run?.cancel();
  closeApp();
  state.selected = { kind, id };
  markSelected();
  clear($("#detail")).append(VIEWS[kind](item));
}

const VIEWS = {
  tools(tool) {
    const form = schemaForm(tool.inputSchema, { prefix: "arg" });
    const runArea = el("div", { class: "run-area" });
    const json = el("textarea", { id: "args-json", class: "json-input", rows: "4" });
    const problem = el("div", { class: "field-problem", role: "alert" });
    const call = (args) => startRun(runArea, "tools/call", { name: tool.name, arguments: args }, { tool });
    const callJSON = () => {
      try {
        call(JSON.parse(json.value || "{}"));
      } catch (error) {
        problem.textContent = `Not JSON: ${error.message}`;
      }
    };
    const app = appUri(tool);
    const seenBy = visibility(tool);
    return detail("tool", tool.name, tool.title || tool.name, tool.description, [
      tool.annotations ? el("div", { class: "badges" }, Object.entries(tool.annotations)
        .map(([key, value]) => el("span", { class: "badge" }, `${key}: ${pretty(value)}`))) : null,
      app ? el("p", { class: "app-link" }, "Shows its results in the MCP App ", el("code", {}, app)) : null,
      seenBy.length < 2 ? el("p", { class: "app-visibility" },
        `Visibility: ${seenBy.join(", ")} only (a host ${seenBy.includes("app") ? "hides it from the model" : "refuses it to apps"}).`) : null,
      el("form", { id: "call-form", onsubmit: (event) => {
        event.preventDefault();
        const outcome = form.read();
        if (!outcome.error) call(outcome.values);
      } }, form.element, el("div", { class: "buttons" },
        el("button", { type: "submit", id: "call", class: "primary" }, "Call tool"))),
      el("details", { class: "as-json", ontoggle: (event) => {
        if (event.target.open && !json.value) json.value = pretty(form.read().values ?? {});
      } }, el("summary", {}, "Arguments as JSON (sent exactly as written)"), json, problem,
      el("button", { type: "button", id: "call-json", onclick: callJSON }, "Call with this JSON")),
      jsonView(tool.inputSchema, { summary: "inputSchema" }),
      tool.outputSchema ? jsonView(tool.outputSchema, { summary: "outputSchema" }) : null,
      runArea]);
  },

  resources(resource) {
    const runArea = el("div", { class: "run-area" });
    return detail("resource", resource.uri, resource.title || resource.name || resource.uri, resource.description, [
      el("p", {}, el("code", {}, resource.uri), resource.mimeType ? ` ${resource.mimeType}` : ""),
      resource.mimeType === APP_MIME_TYPE
        ? el("p", { class: "muted" }, "An MCP App: call a tool linked to it to see it run.") : null,
      el("div", { class: "buttons" },
        el("button", { type: "button", id: "read", class: "primary",
          onclick: () => startRun(runArea, "resources/read", { uri: resource.uri }) }, "Read"),
        el("button", { type: "button", id: "subscribe", onclick: () => subscriptions.addUri(resource.uri) },
          "Add to subscriptions")),
      runArea]);
  },

  templates(template) {
    const variables = templateVariables(template.uriTemplate);
    const form = argumentsForm(variables, { prefix: "var" });
    completing(form, { type: "ref/resource", uri: template.uriTemplate });
    const runArea = el("div", { class: "run-area" });
    return detail("template", template.uriTemplate, template.title || template.name, template.description, [
      el("p", {}, el("code", {}, template.uriTemplate), template.mimeType ? ` ${template.mimeType}` : ""),
      el("form", { id: "call-form", onsubmit: (event) => {
        event.preventDefault();
        const outcome = form.read();
        if (!outcome.error) startRun(runArea, "resources/read", { uri: expandTemplate(template.uriTemplate, outcome.values) });
      } }, form.element, el("div", { class: "buttons" },
        el("button", { type: "submit", id: "call", class: "primary" }, "Read"))),
      runArea]);
  },

  prompts(prompt) {
    const form = argumentsForm(prompt.arguments ?? [], { prefix: "arg" });
    completing(form, { type: "ref/prompt", name: prompt.name });
    const runArea = el("div", { class: "run-area" });
    return detail("prompt", prompt.name, prompt.title || prompt.name, prompt.description, [
      el("form", { id: "call-form", onsubmit: (event) => {
        event.preventDefault();
        const outcome = form.read();
        if (!outcome.error) startRun(runArea, "prompts/get", { name: prompt.name, arguments: outcome.values });
      } }, form.element, el("div", { class: "buttons" },
        el("button", { type: "submit", id: "call", class: "primary" }, "Get prompt"))),
      runArea]);
  },
};

// Completions as you type, when the server offers them.
function completing(form, ref) {
  if (state.wire && state.info?.capabilities?.completions) {
    attachCompletions(form, { wire: state.wire, ref });
  }
}

function detail(kind, name, title, description, parts) {
  return el("article", { class: "item-detail", dataset: { kind, name } },
    el("h2", {}, title), description ? el("p", { class: "description" }, description) : null, parts);
}

async function startRun(container, method, params, { tool = null } = {}) {
  state.run?.cancel();
  const generation = state.generation;
  const previous = state.app;
  state.app = null;
  await previous?.close(); // a view is asked to tear down, and given a moment to answer
  if (generation !== state.generation) return undefined;
  const run = new Run(container, method, params,
    { onReadResource: (uri) => startRun(container, "resources/read", { uri }) });
  state.run = run;
  const view = method === "tools/call" && appUri(tool) ? new AppView({ wire: state.wire, tool,
    args: params.arguments ?? {}, catalog: () => state.catalog, roots: () => roots.roots() }) : null;
  if (view) {
    state.app = view;
    run.app.append(view.element);
    view.start();
  }
  await perform(state.wire, run, method, params, { tool, roots: () => roots.roots() });
  view?.finished(run);
  return run;
}

function closeApp() {
  state.app?.close();
  state.app = null;
}

// Handshake era: the server asked something on a stream; answer it from a card.
function answerServerRequest(request, context) {
  const run = context?.run && !context.run.over ? context.run : null;
  const card = inputCard(request, { roots: () => roots.roots(), signal: run?.signal });
  if (run) {
    run.ask(card);
    card.answer.then(() => run.over || run.setState("running", "Answered; waiting for the server…"), () => {});
  } else messages.addCard(card.element);
  return card.answer;
}

function rootsChanged() {
  const wire = state.wire;
  if (wire?.era === "handshake" && wire.session) wire.notify("notifications/roots/list_changed").catch(() => {});
}

function debounce(fn, ms) {
  let timer = null;
  return (...args) => {
    clearTimeout(timer);
    timer = setTimeout(() => fn(...args), ms);
  };
}

const era = new URLSearchParams(location.search).get("era");
if (era === "handshake" || era === "modern") $("#era").value = era;
$("#era").addEventListener("change", () => {
  const url = new URL(location.href);
  url.searchParams.set("era", $("#era").value);
  history.replaceState(null, "", url);
  connect();
});
$("#token").addEventListener("change", () => connect());
$("#log-level").addEventListener("change", () => state.wire?.setLogLevel($("#log-level").value).catch(() => {}));
$("#refresh").addEventListener("click", () => refreshAll());
connect();
