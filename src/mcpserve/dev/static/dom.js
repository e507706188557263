// Building DOM nodes without markup strings.
//
// Everything the page shows that came from a server (names, descriptions, tool output) goes
// through el(): children are appended as text nodes, attributes set one by one. No HTML is
// ever parsed from server data, so nothing a server returns can run in the page.

export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "class") node.className = value;
    else if (key === "dataset") Object.assign(node.dataset, value);
    else if (key.startsWith("on") && typeof value === "function") {
      node.addEventListener(key.slice(2), value);
    } else if (typeof value === "boolean" || typeof value === "number") {
      // checked, disabled, min, max...: the property, so the control's state follows.
      node[key] = value;
    } else node.setAttribute(key, value);
  }
  append(node, children);
  return node;
}

export function append(node, children) {
  for (const child of [children].flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : String(child));
  }
  return node;
}

export function clear(node) {
  while (node.firstChild) node.firstChild.remove();
  return node;
}

export function pretty(value) {
  try {
    return JSON.stringify(value, null, 2) ?? String(value);
  } catch {
    return String(value);
  }
}

// A <pre> of JSON, optionally folded in a <details> with a summary.
export function jsonView(value, { summary, className = "", open = false } = {}) {
  const pre = el("pre", { class: `json ${className}`.trim() }, pretty(value));
  if (!summary) return pre;
  return el("details", { class: "json-fold", open }, el("summary", {}, summary), pre);
}

export function timeOfDay(date = new Date()) {
  return date.toTimeString().slice(0, 8);
}
