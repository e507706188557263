// A run: one request and everything that came back for it, shown as it arrives.
//
// The notifications on the request's stream appear live (a progress bar per token, a line
// per log message), then the result. In 2026-07-28 an input_required result shows a card
// per inputRequest; once all are answered the same request is sent again with
// inputResponses and the requestState the server gave, until the result is complete (at
// most MAX_ROUNDS rounds: a server that never stops asking is shown failing). Cancel
// aborts the fetch: the server sees the connection close and cancels the handler.
//
// A call the server answers with a task (the tasks extension, which the page declares on
// 2026-07-28) is followed: tasks/get at the task's pollIntervalMs, its status and status
// message shown, a card per question it asks (answered with tasks/update), and its result
// or error once it ends. Cancel then also sends tasks/cancel.

import { clear, el } from "./dom.js";
import { inputCard } from "./inputs.js";
import { renderResponse } from "./render.js";
import { paramHeaders } from "./wire.js";

const MAX_ROUNDS = 25;
const TERMINAL = new Set(["completed", "failed", "cancelled"]);

export class Run {
  constructor(container, method, params, { onReadResource = null } = {}) {
    this.container = container;
    this.onReadResource = onReadResource;
    this.controller = new AbortController();
    this.over = false;
    this.started = performance.now();
    this.progress = new Map();
    this.status = el("span", { class: "run-status" }, "Running…");
    this.cancelButton = el("button", { type: "button", class: "small cancel-run",
      onclick: () => this.cancel() }, "Cancel");
    this.activity = el("div", { class: "run-activity" });
    this.inputs = el("div", { class: "run-inputs" });
    this.app = el("div", { class: "run-app" }); // the tool's MCP App, if it has one
    this.result = el("div", { class: "run-result" });
    this.reply = null;
    this.onCancel = null; // what else cancelling does (a task: tasks/cancel)
    const target = params.name ?? params.uri ?? "";
    this.element = el("section", { id: "run-view", class: "run", dataset: { state: "running", method } },
      el("header", { class: "run-head" }, el("code", { class: "run-title" }, `${method} ${target}`),
        this.status, this.cancelButton), this.activity, this.inputs, this.app, this.result);
    clear(container).append(this.element);
  }

  get signal() {
    return this.controller.signal;
  }

  setState(name, text) {
    this.element.dataset.state = name;
    this.status.textContent = text;
    if (this.over) this.cancelButton.remove();
  }

  note(message) {
    const params = message.params ?? {};
    if (message.method === "notifications/progress") {
      let row = this.progress.get(params.progressToken);
      if (!row) {
        row = { bar: el("progress", { class: "progress-bar" }), text: el("span", { class: "progress-text" }) };
        this.progress.set(params.progressToken, row);
        this.activity.append(el("div", { class: "progress" }, row.bar, row.text));
      }
      if (typeof params.total === "number") row.bar.max = params.total;
      row.bar.value = Number(params.progress) || 0;
      row.text.textContent = ` ${params.progress}${params.total !== undefined ? ` / ${params.total}` : ""}${params.message ? ` ${params.message}` : ""}`;
    } else if (message.method === "notifications/message") {
      const data = typeof params.data === "string" ? params.data : JSON.stringify(params.data);
      this.activity.append(el("div", { class: `log-line level-${params.level}` },
        el("span", { class: "level" }, `[${params.level}]`), params.logger ? ` ${params.logger}:` : "", ` ${data}`));
    } else {
      this.activity.append(el("div", { class: "other-note" }, el("code", {}, String(message.method)), ` ${JSON.stringify(params)}`));
    }
  }

  ask(card) {
    this.inputs.append(card.element);
    this.setState("input", "Waiting for your answer…");
  }

  finish(method, reply, rounds) {
    this.over = true;
    this.reply = reply;
    const message = reply.message;
    const failed = Boolean(message.error) || Boolean(message.result?.isError);
    const time = `${Math.round(performance.now() - this.started)} ms`;
    this.setState(failed ? "error" : "done",
      `${failed ? "Error" : "Done"} in ${time}${rounds > 1 ? ` after ${rounds} rounds` : ""}`);
    this.result.append(renderResponse(method, reply, { onReadResource: this.onReadResource }));
  }

  fail(error) {
    this.over = true;
    this.setState("failed", `Failed: ${error.message}`);
    this.result.append(el("div", { class: "rpc-error", role: "alert" }, String(error.message)));
  }

  cancel() {
    if (this.over) return;
    this.over = true;
    this.controller.abort();
    this.onCancel?.();
    this.setState("cancelled", "Cancelled");
  }
}

// Send the request, round after round while the server needs input; show it all in run.
export async function perform(wire, run, method, params, { tool = null, roots = () => [] } = {}) {
  if (!wire) return run.fail(new Error("Not connected"));
  const headers = tool ? paramHeaders(tool, params.arguments) : {};
  let attempt = params;
  try {
    for (let round = 1; round <= MAX_ROUNDS; round++) {
      const reply = await wire.request(method, attempt, { progress: true, headers, signal: run.signal,
        onNotification: (message) => run.note(message), context: { run } });
      const result = reply.message.result;
      if (result?.resultType === "task") return await followTask(wire, run, method, result, roots);
      if (result?.resultType !== "input_required") return run.finish(method, reply, round);
      run.setState("input", `Round ${round}: the server needs your input`);
      const answers = await answerAll(result.inputRequests ?? {}, run, round, roots);
      attempt = { ...params, inputResponses: answers };
      if (result.requestState !== undefined) attempt.requestState = result.requestState;
      run.setState("running", `Round ${round + 1}: sending your answers…`);
    }
    return run.fail(new Error(`Still input_required after ${MAX_ROUNDS} rounds`));
  } catch (error) {
    if (error.name === "AbortError") return run.cancel();
    return run.over ? undefined : run.fail(error);
  }
}

// A task, polled until it ends; its questions answered with tasks/update.
async function followTask(wire, run, method, created, roots) {
  const taskId = String(created.taskId);
  const status = el("span", { class: "task-status" });
  run.element.dataset.task = taskId;
  run.activity.append(el("div", { class: "task" }, "Task ", el("code", { class: "task-id" }, taskId),
    ": ", status));
  run.onCancel = () => wire.request("tasks/cancel", { taskId }).catch(() => {});
  const answered = new Set();
  let task = created;
  for (;;) {
    status.textContent = task.statusMessage ? `${task.status}: ${task.statusMessage}` : task.status;
    if (TERMINAL.has(task.status)) return endTask(run, method, task);
    const open = Object.entries(task.inputRequests ?? {}).filter(([key]) => !answered.has(key));
    if (task.status === "input_required" && open.length) {
      run.setState("input", "The task needs your input");
      const answers = await Promise.all(open.map(([key, request]) => {
        const card = inputCard(request, { key, roots, signal: run.signal });
        run.inputs.append(card.element);
        return card.answer;
      }));
      for (const [key] of open) answered.add(key);
      const inputResponses = Object.fromEntries(open.map(([key], index) => [key, answers[index]]));
      await wire.request("tasks/update", { taskId, inputResponses }, { signal: run.signal });
    } else {
      run.setState("running", "Task running…");
      await sleep(Math.min(5000, Math.max(50, Number(task.pollIntervalMs) || 500)), run.signal);
    }
    const reply = await wire.request("tasks/get", { taskId }, { signal: run.signal });
    if (reply.message.error) return run.finish(method, reply, 1);
    task = reply.message.result;
  }
}

function endTask(run, method, task) {
  if (task.status === "cancelled") {
    run.over = true;
    return run.setState("cancelled", "The task was cancelled");
  }
  const message = task.status === "completed" ? { result: task.result ?? {} }
    : { error: task.error ?? { message: task.statusMessage ?? "The task failed" } };
  return run.finish(method, { message, status: 200, headers: new Headers() }, 1);
}

function sleep(ms, signal) {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener("abort", () => {
      clearTimeout(timer);
      reject(new DOMException("The request was cancelled", "AbortError"));
    }, { once: true });
  });
}

async function answerAll(requests, run, round, roots) {
  const entries = Object.entries(requests);
  run.inputs.append(el("h4", {}, `Round ${round}: input required (${entries.length})`));
  const answers = await Promise.all(entries.map(([key, request]) => {
    const card = inputCard(request, { key, roots, signal: run.signal });
    run.inputs.append(card.element);
    return card.answer;
  }));
  return Object.fromEntries(entries.map(([key], index) => [key, answers[index]]));
}

