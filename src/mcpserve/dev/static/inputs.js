// Answering the server's questions by hand: elicitation, sampling and roots.
//
// Each question becomes a card; its promise resolves with the result the protocol expects
// for that method. The result is the same in both eras: 2026-07-28 puts it in the retry's
// inputResponses, the handshake era POSTs it as the JSON-RPC response to the server's
// request. An elicitation shows the form built from its requestedSchema (or, in URL mode,
// the link to visit) with Accept, Decline and Cancel; a form with a field outside the spec's
// primitives (an object, a list of free values) shows why it cannot be filled in, and only
// Decline and Cancel work; a sampling request shows the messages
// and takes the model's reply as you type it; a roots request shows your roots to edit
// before sending. A method the page does not know takes its result as raw JSON.

import { el, jsonView } from "./dom.js";
import { formProblem, schemaForm } from "./forms.js";
import { renderBlocks } from "./render.js";

let cards = 0;

// {element, answer}: answer settles when the user answers, or rejects when signal aborts.
export function inputCard(request, { key = null, roots = () => [], signal = null } = {}) {
  const method = request?.method ?? "(unknown)";
  const params = request?.params ?? {};
  const id = `input-${++cards}`;
  const element = el("div", { class: "input-request", id, dataset: { method, key: key ?? "" } },
    el("div", { class: "input-head" }, el("strong", {}, method), key ? el("code", {}, ` ${key}`) : null));
  let settle;
  const answer = new Promise((resolve, reject) => {
    settle = (value) => {
      element.classList.add("answered");
      for (const control of element.querySelectorAll("input, select, textarea, button")) control.disabled = true;
      element.append(jsonView(value, { summary: "Sent", className: "sent-answer" }));
      resolve(value);
    };
    signal?.addEventListener("abort", () => {
      element.classList.add("abandoned");
      reject(new DOMException("The request was cancelled", "AbortError"));
    }, { once: true });
  });
  const build = BUILDERS[method] ?? rawAnswer;
  element.append(...build(params, settle, { id, roots }));
  return { element, answer };
}

const BUILDERS = {
  "elicitation/create"(params, settle, { id }) {
    const parts = [el("p", { class: "input-message" }, String(params.message ?? ""))];
    let form = null;
    let refusal = null;
    if (params.mode === "url") {
      const url = String(params.url ?? "");
      parts.push(/^https?:\/\//i.test(url)
        ? el("a", { href: url, target: "_blank", rel: "noopener noreferrer", class: "elicit-url" }, url)
        : el("code", {}, url));
    } else if ((refusal = formProblem(params.requestedSchema))) {
      parts.push(el("p", { class: "form-refusal", role: "alert" },
        `This form cannot be filled in: ${refusal}. Decline or cancel it.`));
    } else {
      form = schemaForm(params.requestedSchema, { prefix: `${id}-field` });
      parts.push(form.element);
    }
    const problem = el("div", { class: "field-problem", role: "alert" });
    const accept = () => {
      if (!form) return settle({ action: "accept" });
      const outcome = form.read();
      if (outcome.error) {
        problem.textContent = outcome.error;
        return undefined;
      }
      return settle({ action: "accept", content: outcome.values });
    };
    parts.push(problem, el("div", { class: "buttons" },
      el("button", { type: "button", class: "primary accept", onclick: accept, disabled: Boolean(refusal) }, "Accept"),
      el("button", { type: "button", class: "decline", onclick: () => settle({ action: "decline" }) }, "Decline"),
      el("button", { type: "button", class: "cancel", onclick: () => settle({ action: "cancel" }) }, "Cancel")));
    return parts;
  },

  "sampling/createMessage"(params, settle, { id }) {
    const messages = Array.isArray(params.messages) ? params.messages : [];
    const shown = messages.map((message) => el("div", { class: `prompt-message role-${message.role}` },
      el("div", { class: "role" }, String(message.role)),
      renderBlocks([message.content].flat())));
    const reply = el("textarea", { id: `${id}-reply`, name: "reply", rows: "3",
      placeholder: "The model's reply, as you would like it" });
    const model = el("input", { id: `${id}-model`, name: "model", value: "dev-page-human" });
    const send = () => settle({ role: "assistant", content: { type: "text", text: reply.value },
      model: model.value || "dev-page-human", stopReason: "endTurn" });
    return [
      params.systemPrompt ? el("p", { class: "muted" }, `System prompt: ${params.systemPrompt}`) : null,
      el("div", { class: "sampled" }, shown),
      el("p", { class: "muted" }, `maxTokens: ${params.maxTokens ?? "?"}`),
      el("label", { for: reply.id }, "Reply"), reply,
      el("label", { for: model.id }, "Model name"), model,
      el("div", { class: "buttons" }, el("button", { type: "button", class: "primary send", onclick: send }, "Send reply")),
    ].filter(Boolean);
  },

  "roots/list"(params, settle, { roots }) {
    const list = el("ul", { class: "roots-edit" });
    const add = (root = { uri: "", name: "" }) => list.append(rootRow(root));
    for (const root of roots()) add(root);
    const send = () => settle({ roots: readRoots(list) });
    return [
      el("p", { class: "muted" }, "The roots to offer (edit them before sending):"),
      list,
      el("div", { class: "buttons" },
        el("button", { type: "button", class: "small add-root", onclick: () => add() }, "Add root"),
        el("button", { type: "button", class: "primary send", onclick: send }, "Send roots")),
    ];
  },
};

function rawAnswer(params, settle, { id }) {
  const area = el("textarea", { id: `${id}-raw`, class: "json-input", rows: "4" }, "{}");
  const problem = el("div", { class: "field-problem", role: "alert" });
  const send = () => {
    try {
      settle(JSON.parse(area.value));
    } catch (error) {
      problem.textContent = `Not JSON: ${error.message}`;
    }
  };
  return [jsonView(params, { summary: "params", open: true }),
    el("label", { for: area.id }, "Result (JSON)"), area, problem,
    el("div", { class: "buttons" }, el("button", { type: "button", class: "primary send", onclick: send }, "Send"))];
}

// One editable root: a URI and an optional name.
export function rootRow(root, onChange = () => {}) {
  const uri = el("input", { class: "root-uri", name: "uri", value: root.uri ?? "",
    placeholder: "file:///path/to/project", oninput: onChange });
  const name = el("input", { class: "root-name", name: "name", value: root.name ?? "",
    placeholder: "name (optional)", oninput: onChange });
  const row = el("li", { class: "root" }, uri, name,
    el("button", { type: "button", class: "small remove", title: "Remove",
      onclick: () => { row.remove(); onChange(); } }, "×"));
  return row;
}

export function readRoots(list) {
  const roots = [];
  for (const row of list.querySelectorAll("li.root")) {
    const uri = row.querySelector(".root-uri").value.trim();
    const name = row.querySelector(".root-name").value.trim();
    if (uri) roots.push(name ? { uri, name } : { uri });
  }
  return roots;
}
