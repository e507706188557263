// Completions for a prompt's arguments and a template's variables (completion/complete).
//
// When the server declares the completions capability, each text field of the form gets a
// <datalist> the browser offers as you type: a moment after each keystroke the page asks
// completion/complete for the field (with the other fields' values as context.arguments)
// and shows the values the server answers, and how many more it knows of. An answer that
// arrives after a newer keystroke's is dropped; an error is shown as the field's hint.

import { el } from "./dom.js";
import { describeError } from "./wire.js";

const DELAY_MS = 150;

export function attachCompletions(form, { wire, ref }) {
  for (const field of form.fields) {
    const input = field.row.querySelector("input[type=text]");
    if (!input) continue;
    const list = el("datalist", { id: `${input.id}-completions` });
    const note = el("div", { class: "field-completions muted", role: "status" });
    input.setAttribute("list", list.id);
    input.setAttribute("autocomplete", "off");
    field.row.append(list, note);
    let timer = null;
    let asked = 0;
    input.addEventListener("input", () => {
      clearTimeout(timer);
      timer = setTimeout(async () => {
        const mine = ++asked;
        const shown = await complete(wire, ref, field.name, input.value, others(form, field));
        if (mine !== asked) return; // a newer keystroke asked again
        list.replaceChildren(...shown.values.map((value) => el("option", { value })));
        note.textContent = shown.note;
        field.row.dataset.completions = String(shown.values.length);
      }, DELAY_MS);
    });
  }
}

async function complete(wire, ref, name, value, context) {
  const params = { ref, argument: { name, value } };
  if (Object.keys(context).length) params.context = { arguments: context };
  try {
    const { message } = await wire.request("completion/complete", params);
    if (message.error) return { values: [], note: `Completions: ${describeError(message)}` };
    const completion = message.result?.completion ?? {};
    const values = Array.isArray(completion.values) ? completion.values.map(String) : [];
    const more = typeof completion.total === "number" && completion.total > values.length
      ? completion.total - values.length : null;
    const note = more ? `${more} more` : completion.hasMore ? "more to come" : "";
    return { values, note };
  } catch (error) {
    return { values: [], note: `Completions: ${error.message}` };
  }
}

// The other text fields' values, as the server's context.arguments.
function others(form, field) {
  const values = {};
  for (const other of form.fields) {
    const input = other.row.querySelector("input[type=text]");
    if (other !== field && input && input.value !== "") values[other.name] = input.value;
  }
  return values;
}
