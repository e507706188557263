// Forms generated from JSON Schemas: a tool's inputSchema, an elicitation's
// requestedSchema, a prompt's or a template's arguments.
//
// One field per top-level property, its control named after it (name="<property>"), chosen
// by its schema: a select for enum or const choices, checkboxes for an array of choices, a
// checkbox for a boolean, a number input for numbers, a text input for strings. Anything a
// plain control cannot hold (objects, arrays of objects, unions of types) is a textarea of
// JSON. Local $refs ("#/$defs/...", as pydantic writes them) are followed, and a nullable
// type ("Optional[X]") is shown as X. read() turns the fields back into an object: empty
// optional fields are left out, so the server's defaults apply; a required field left empty
// is reported next to the field and nothing is sent.

import { el } from "./dom.js";

export function schemaForm(schema, { prefix = "field" } = {}) {
  const root = isObject(schema) ? schema : {};
  const properties = isObject(root.properties) ? root.properties : {};
  const required = new Set(Array.isArray(root.required) ? root.required : []);
  const element = el("div", { class: "schema-form" });
  const fields = Object.entries(properties).map(([name, raw]) =>
    makeField(name, resolve(raw, root), required.has(name), `${prefix}-${name}`));
  for (const field of fields) element.append(field.row);
  if (!fields.length) element.append(el("p", { class: "muted no-args" }, "No arguments."));
  return {
    element,
    fields,
    read() {
      const values = {};
      let ok = true;
      for (const field of fields) {
        const outcome = field.read();
        field.problem.textContent = outcome.error ?? "";
        field.row.classList.toggle("invalid", Boolean(outcome.error));
        if (outcome.error) ok = false;
        else if ("value" in outcome) values[field.name] = outcome.value;
      }
      return ok ? { values } : { error: "Some fields need a value" };
    },
  };
}

// Why an elicitation form cannot be filled in (null when it can): its first field that is
// none of the spec's primitives (a string, a number, a boolean, a choice or a list of
// choices). A tool's arguments may nest, and get a JSON textarea for that; a form may not,
// and a textarea would only send what the server refuses and asks for again.
export function formProblem(schema) {
  const root = isObject(schema) ? schema : {};
  const properties = isObject(root.properties) ? root.properties : {};
  for (const [name, raw] of Object.entries(properties)) {
    const field = resolve(raw, root);
    if (kindOf(field) !== "json") continue;
    const type = typeOf(field);
    const what = type === "object" || isObject(field.properties) ? "an object"
      : type === "array" ? "a list of free values"
        : Array.isArray(field.type) || Array.isArray(field.anyOf ?? field.oneOf) ? "a choice of several types"
          : "of no type a form knows";
    return `field '${name}' is ${what}, and a form field is a string, a number, a boolean or a choice`;
  }
  return null;
}

// A form for a list of named string arguments (prompts, URI template variables).
export function argumentsForm(args, { prefix = "arg" } = {}) {
  const properties = {};
  const required = [];
  for (const arg of args) {
    properties[arg.name] = { type: "string", title: arg.title, description: arg.description };
    if (arg.required) required.push(arg.name);
  }
  return schemaForm({ type: "object", properties, required }, { prefix });
}

function makeField(name, schema, required, id) {
  const kind = kindOf(schema);
  const label = el("label", { for: id, class: "field-label" }, schema.title || name,
    required ? el("span", { class: "required", title: "required" }, " *") : null);
  const hint = schema.description ? el("div", { class: "field-hint" }, schema.description) : null;
  const problem = el("div", { class: "field-problem", role: "alert" });
  const control = CONTROLS[kind](name, schema, required, id);
  const row = el("div", { class: `field field-${kind}`, dataset: { prop: name } },
    label, control.element, hint, problem);
  return { name, row, problem, read: () => control.read() };
}

const CONTROLS = {
  choice(name, schema, required, id) {
    const choices = choicesOf(schema);
    // Optional: "(none)" leaves it out. Required without a default: nothing is preselected,
    // so a choice is never sent that the user did not make.
    const blank = required ? (schema.default === undefined ? "(choose one)" : null) : "(none)";
    const select = el("select", { id, name },
      blank ? el("option", { value: "" }, blank) : null,
      choices.map((choice, index) => el("option", { value: String(index) }, choice.label)));
    const preset = choices.findIndex((choice) => same(choice.value, schema.default));
    if (preset >= 0) select.value = String(preset);
    return {
      element: select,
      read: () => (select.value === "" ? missing(required)
        : { value: choices[Number(select.value)].value }),
    };
  },

  multi(name, schema, required, id) {
    const choices = choicesOf(resolve(schema.items, schema));
    const boxes = choices.map((choice, index) => el("input", { type: "checkbox", name,
      value: String(index), id: `${id}-${index}`,
      checked: Array.isArray(schema.default) && schema.default.some((v) => same(v, choice.value)) }));
    const element = el("div", { id, class: "choices" }, choices.map((choice, index) =>
      el("label", { class: "choice" }, boxes[index], ` ${choice.label}`)));
    return {
      element,
      read() {
        const value = boxes.filter((box) => box.checked).map((box) => choices[Number(box.value)].value);
        return value.length || !required ? (value.length ? { value } : {}) : missing(true);
      },
    };
  },

  boolean(name, schema, required, id) {
    if (!required && schema.default === undefined) {
      // Optional with no default: "not sent" is a third answer a checkbox cannot give.
      const select = el("select", { id, name }, el("option", { value: "" }, "(none)"),
        el("option", { value: "true" }, "true"), el("option", { value: "false" }, "false"));
      return { element: select, read: () => (select.value === "" ? {} : { value: select.value === "true" }) };
    }
    const box = el("input", { type: "checkbox", id, name, checked: schema.default === true });
    return { element: box, read: () => ({ value: box.checked }) };
  },

  number(name, schema, required, id) {
    const integer = typeOf(schema) === "integer";
    const input = el("input", { type: "number", id, name, step: integer ? "1" : "any",
      min: text(schema.minimum), max: text(schema.maximum),
      value: schema.default !== undefined ? String(schema.default) : undefined });
    return {
      element: input,
      read() {
        if (input.value.trim() === "") return missing(required);
        const value = Number(input.value);
        if (!Number.isFinite(value)) return { error: "Not a number" };
        if (integer && !Number.isInteger(value)) return { error: "Not an integer" };
        return { value };
      },
    };
  },

  string(name, schema, required, id) {
    const type = { email: "email", uri: "url", date: "date" }[schema.format] ?? "text";
    const input = el("input", { id, name, type, maxlength: text(schema.maxLength),
      placeholder: schema.format ?? schema.pattern ?? undefined });
    input.value = typeof schema.default === "string" ? schema.default : "";
    return { element: input, read: () => (input.value === "" ? missing(required) : { value: input.value }) };
  },

  json(name, schema, required, id) {
    const area = el("textarea", { id, name, class: "json-input", rows: "3",
      placeholder: `JSON (${describeType(schema)})` });
    if (schema.default !== undefined) area.value = JSON.stringify(schema.default);
    return {
      element: area,
      read() {
        if (area.value.trim() === "") return missing(required);
        try {
          return { value: JSON.parse(area.value) };
        } catch (error) {
          return { error: `Not JSON: ${error.message}` };
        }
      },
    };
  },
};

function text(value) {
  return value === undefined || value === null ? undefined : String(value);
}

function missing(required) {
  return required ? { error: "Required" } : {};
}

function kindOf(schema) {
  if (choicesOf(schema).length) return "choice";
  const type = typeOf(schema);
  if (type === "array" && choicesOf(resolve(schema.items, schema)).length) return "multi";
  if (type === "boolean") return "boolean";
  if (type === "integer" || type === "number") return "number";
  if (type === "string") return "string";
  return "json";
}

// Choices as {value, label}: enum (with enumNames, the older titled form), or
// oneOf/anyOf alternatives that are each a const (with a title).
function choicesOf(schema) {
  if (!isObject(schema)) return [];
  if (Array.isArray(schema.enum)) {
    const names = Array.isArray(schema.enumNames) ? schema.enumNames : [];
    return schema.enum.map((value, index) => ({ value, label: String(names[index] ?? show(value)) }));
  }
  if (schema.const !== undefined) return [{ value: schema.const, label: String(schema.title ?? show(schema.const)) }];
  const options = schema.oneOf ?? schema.anyOf;
  if (Array.isArray(options) && options.length && options.every((o) => isObject(o) && o.const !== undefined)) {
    return options.map((o) => ({ value: o.const, label: String(o.title ?? show(o.const)) }));
  }
  return [];
}

// The one JSON type a schema stands for, or null ("string" for ["string", "null"]).
function typeOf(schema) {
  const type = schema?.type;
  if (typeof type === "string") return type;
  if (Array.isArray(type)) {
    const real = type.filter((t) => t !== "null");
    return real.length === 1 ? real[0] : null;
  }
  return null;
}

// Follow a local $ref, and see through a nullable union (anyOf [X, {type: null}]).
function resolve(schema, root, depth = 0) {
  if (!isObject(schema) || depth > 8) return isObject(schema) ? schema : {};
  if (typeof schema.$ref === "string" && schema.$ref.startsWith("#/")) {
    let target = root;
    for (const part of schema.$ref.slice(2).split("/")) target = target?.[decodeURIComponent(part)];
    const { $ref, ...rest } = schema;
    return resolve({ ...(isObject(target) ? target : {}), ...rest }, root, depth + 1);
  }
  const union = schema.anyOf ?? schema.oneOf;
  if (Array.isArray(union) && !choicesOf(schema).length) {
    const real = union.filter((option) => !(isObject(option) && option.type === "null"));
    if (real.length === 1) {
      const { anyOf, oneOf, ...rest } = schema;
      return resolve({ ...rest, ...real[0] }, root, depth + 1);
    }
  }
  return schema;
}

function describeType(schema) {
  if (schema.type) return [schema.type].flat().join(" | ");
  if (schema.anyOf || schema.oneOf) return "one of several types";
  return "any value";
}

// A choice's label: a string as itself, anything else as JSON (so 1 and "1" differ).
function show(value) {
  return typeof value === "string" ? value : JSON.stringify(value);
}

function same(a, b) {
  return JSON.stringify(a) === JSON.stringify(b);
}

function isObject(value) {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

// RFC 6570 variables of a URI template; those of {?...} and {&...} are optional.
export function templateVariables(template) {
  const variables = [];
  for (const [, operator, body] of template.matchAll(/\{([+#./;?&]?)([^}]*)\}/g)) {
    for (const spec of body.split(",")) {
      const name = spec.replace(/\*$/, "").replace(/:\d+$/, "");
      if (name && !variables.some((variable) => variable.name === name)) {
        variables.push({ name, required: operator !== "?" && operator !== "&" });
      }
    }
  }
  return variables;
}

const OPERATORS = { "": [",", "", false], "+": [",", "", true], "#": [",", "#", true],
  ".": [".", ".", false], "/": ["/", "/", false], ";": [";", ";", false],
  "?": ["&", "?", false], "&": ["&", "&", false] };

export function expandTemplate(template, values) {
  return template.replace(/\{([+#./;?&]?)([^}]*)\}/g, (_, operator, body) => {
    const [separator, first, reserved] = OPERATORS[operator];
    const parts = [];
    for (const spec of body.split(",")) {
      const name = spec.replace(/\*$/, "").replace(/:\d+$/, "");
      const value = values[name];
      if (value === undefined) continue;
      const encoded = reserved ? encodeURI(value) : encodeURIComponent(value);
      parts.push(";?&".includes(operator) && operator ? `${name}=${encoded}` : encoded);
    }
    return parts.length ? first + parts.join(separator) : "";
  });
}
