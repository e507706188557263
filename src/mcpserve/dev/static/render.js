// Showing what a server answered: content blocks, structured content, the raw JSON.
//
// Content blocks are shown as a client would: text as text, images and audio from their
// base64 data (data: URLs, which the page's Content-Security-Policy allows for img and
// media only), embedded resources with their URI and text or blob, resource links as a
// button that reads the resource. Types the page does not know are shown as JSON. Every
// result also has its raw JSON-RPC response, folded, so nothing the server said is hidden.

import { el, jsonView, pretty } from "./dom.js";

const IMAGE = /^image\/[\w.+-]+$/i;
const AUDIO = /^audio\/[\w.+-]+$/i;

// The answer to any request: a JSON-RPC error, or the method's result.
export function renderResponse(method, reply, options = {}) {
  const message = reply.message;
  const body = el("div", { class: "response" });
  if (message.error) body.append(renderError(message.error, reply.status));
  else if (method === "tools/call") body.append(renderToolResult(message.result, options));
  else if (method === "prompts/get") body.append(renderPrompt(message.result, options));
  else if (method === "resources/read") body.append(renderContents(message.result?.contents, options));
  else body.append(jsonView(message.result));
  body.append(jsonView(message, { summary: `Raw JSON (HTTP ${reply.status})`, className: "raw" }));
  return body;
}

export function renderError(error, status) {
  return el("div", { class: "rpc-error", role: "alert" },
    el("strong", {}, `JSON-RPC error ${error?.code ?? "?"}`),
    status && status !== 200 ? el("span", { class: "muted" }, ` (HTTP ${status})`) : null,
    el("p", { class: "error-message" }, String(error?.message ?? "")),
    error?.data !== undefined ? jsonView(error.data, { summary: "data", open: true }) : null);
}

export function renderToolResult(result, options = {}) {
  const view = el("div", { class: "tool-result", dataset: { error: String(Boolean(result?.isError)) } });
  if (result?.isError) {
    view.append(el("p", { class: "tool-error", role: "alert" },
      "The tool reported an error (isError: true)"));
  }
  view.append(el("h4", {}, "Content"), renderBlocks(result?.content, options));
  if (result?.structuredContent !== undefined) {
    view.append(el("h4", {}, "Structured content"), jsonView(result.structuredContent, { className: "structured" }));
  }
  return view;
}

export function renderPrompt(result, options = {}) {
  const view = el("div", { class: "prompt-result" });
  if (result?.description) view.append(el("p", { class: "description" }, result.description));
  for (const message of result?.messages ?? []) {
    view.append(el("div", { class: `prompt-message role-${message.role}` },
      el("div", { class: "role" }, message.role), renderBlocks([message.content], options)));
  }
  return view;
}

export function renderContents(contents, options = {}) {
  const view = el("div", { class: "contents" });
  for (const item of contents ?? []) view.append(renderResourceContents(item, options));
  if (!contents?.length) view.append(el("p", { class: "muted" }, "No contents."));
  return view;
}

export function renderBlocks(blocks, options = {}) {
  const list = el("div", { class: "blocks" });
  for (const block of blocks ?? []) list.append(renderBlock(block, options));
  if (!blocks?.length) list.append(el("p", { class: "muted" }, "(no content blocks)"));
  return list;
}

export function renderBlock(block, options = {}) {
  const kind = typeof block?.type === "string" ? block.type : "unknown";
  const render = BLOCKS[kind] ?? unknownBlock;
  const view = el("div", { class: `block type-${kind}`, dataset: { type: kind } },
    el("div", { class: "block-type" }, kind), render(block, options));
  if (block?.annotations) view.append(jsonView(block.annotations, { summary: "annotations" }));
  return view;
}

const BLOCKS = {
  text: (block) => el("pre", { class: "block-text" }, String(block.text ?? "")),
  image: (block) => media("img", block.mimeType, block.data, IMAGE),
  audio: (block) => media("audio", block.mimeType, block.data, AUDIO),
  resource: (block, options) => renderResourceContents(block.resource ?? {}, options),
  resource_link: (block, options) => el("div", { class: "resource-link" },
    el("code", {}, String(block.uri ?? "")),
    block.name ? el("span", {}, ` ${block.name}`) : null,
    block.description ? el("div", { class: "muted" }, block.description) : null,
    options.onReadResource && typeof block.uri === "string"
      ? el("button", { type: "button", class: "small", onclick: () => options.onReadResource(block.uri) }, "Read")
      : null),
};

function unknownBlock(block) {
  return jsonView(block);
}

function renderResourceContents(item, options) {
  const head = el("div", { class: "resource-head" }, el("code", { class: "uri" }, String(item.uri ?? "")),
    item.mimeType ? el("span", { class: "mime" }, ` ${item.mimeType}`) : null);
  let body;
  if (typeof item.text === "string") body = el("pre", { class: "block-text" }, item.text);
  else if (typeof item.blob === "string") {
    if (IMAGE.test(item.mimeType ?? "")) body = media("img", item.mimeType, item.blob, IMAGE);
    else if (AUDIO.test(item.mimeType ?? "")) body = media("audio", item.mimeType, item.blob, AUDIO);
    else body = blobLink(item);
  } else body = jsonView(item);
  return el("div", { class: "resource-contents", dataset: { uri: String(item.uri ?? "") } }, head, body);
}

// An <img> or <audio> from base64 data, when the media type is one it can show.
function media(tag, mimeType, data, allowed) {
  if (typeof data !== "string" || !allowed.test(mimeType ?? "")) {
    return el("p", { class: "muted" }, `Cannot show ${tag} of type ${pretty(mimeType)}`);
  }
  const url = `data:${mimeType};base64,${data}`;
  const node = tag === "img"
    ? el("img", { src: url, alt: `${mimeType} image`, class: "block-media" })
    : el("audio", { src: url, controls: true, class: "block-media" });
  return el("div", {}, node, el("div", { class: "muted" }, `${mimeType}, ${approxBytes(data)} bytes`));
}

function blobLink(item) {
  const type = /^[\w.+-]+\/[\w.+-]+$/.test(item.mimeType ?? "") ? item.mimeType : "application/octet-stream";
  return el("p", {}, `${approxBytes(item.blob)} bytes of ${type} `,
    el("a", { href: `data:${type};base64,${item.blob}`, download: "resource" }, "download"));
}

function approxBytes(base64) {
  const padding = base64.endsWith("==") ? 2 : base64.endsWith("=") ? 1 : 0;
  return Math.max(0, Math.floor((base64.length * 3) / 4) - padding);
}
