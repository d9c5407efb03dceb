// One task: its fields, input, outcome, event timeline and evidence,
// followed until it is terminal; a Cancel button while it is not, a Retry
// button once it failed, timed out or was cancelled.

import { api, APIError } from "./api.js";
import { $, el, flash, say, show } from "./dom.js";
import { fmtTime, fmtValue, stateBadge, taskDuration, TERMINAL } from "./format.js";
import { every, navigation, stopIf } from "./refresh.js";
import { showing, taskHref } from "./router.js";

const EVERY_MS = 2000;
const DEPS_SHOWN = 50; // dependency links listed; the rest are counted

// RETRYABLE are the states POST /v1/tasks/{id}/retry accepts.
const RETRYABLE = new Set(["failed", "timed_out", "cancelled"]);

let taskId = null; // the task on screen

export const task = {
  name: "task",
  path: ["tasks", ":id"],
  admin: false,
  menu: "tasks",
  wire() {
    $("task-cancel").addEventListener("click", cancelTask);
    $("task-retry").addEventListener("click", retryTask);
  },
  async open({ id }) {
    const nav = navigation();
    if (taskId !== id) {
      taskId = id;
      say($("task-cancel-answer"), "");
      $("task-id").textContent = id;
      $("task-state").replaceChildren();
      for (const n of ["task-fields", "task-outcome", "task-timeline", "task-depends-on", "task-input"]) $(n).replaceChildren();
      show($("task-deps"), false);
      $("task-evidence").tHead.replaceChildren();
      $("task-evidence").tBodies[0].replaceChildren();
    }
    loadInput(id);
    follow(nav, id);
  },
};

// follow reads the task until it is terminal.
async function follow(nav, id) {
  const terminal = await loadTask(id);
  if (!terminal) {
    every(nav, EVERY_MS, async () => {
      if (await loadTask(id)) stopIf(nav);
    });
  }
}

// loadInput shows the task's input as admitted (it never changes).
async function loadInput(id) {
  try {
    const r = await api("GET", "/v1/tasks/" + encodeURIComponent(id) + "/input");
    if (!showing("task") || taskId !== id) return;
    $("task-input").textContent = JSON.stringify(r.data, null, 2);
  } catch (e) {
    if (!showing("task") || taskId !== id) return;
    $("task-input").textContent = e instanceof APIError ? "(" + e.describe() + ")" : "";
  }
}

// loadTask reads a task, its events and evidence and shows them; it
// reports whether the task is terminal (nothing more will change).
async function loadTask(id) {
  const path = "/v1/tasks/" + encodeURIComponent(id);
  let t, events, evidence;
  try {
    const [tr, ev, evd] = await Promise.all([api("GET", path), api("GET", path + "/events"), api("GET", path + "/evidence")]);
    t = tr.data;
    events = ev.data.events;
    evidence = evd.data.evidence;
  } catch (e) {
    if (!showing("task") || taskId !== id) return true;
    if (e.status === 404) {
      const missing = $("task-missing");
      missing.textContent = "No task " + id + " for this key's tenant.";
      show(missing, true);
      show($("task-body"), false);
      show($("task-cancel"), false);
      show($("task-retry"), false);
      return true;
    }
    if (e instanceof APIError) flash("Task: " + e.describe());
    return false;
  }
  if (!showing("task") || taskId !== id) return true;
  flash("");
  show($("task-missing"), false);
  show($("task-body"), true);
  renderTask(t);
  renderTimeline(events);
  renderEvidence(evidence);
  return TERMINAL.has(t.state);
}

function renderTask(t) {
  $("task-state").replaceChildren(stateBadge(t.state));
  $("task-state").dataset.state = t.state;
  const cancel = $("task-cancel");
  show(cancel, !TERMINAL.has(t.state));
  cancel.disabled = false;
  const retry = $("task-retry");
  show(retry, RETRYABLE.has(t.state));
  retry.disabled = false;
  const fields = [
    ["tenant", t.tenant], ["author", t.author], ["workflow", t.workflow], ["pool", t.pool],
    ["attempt", t.attempt + " of " + t.max_attempts], ["priority", t.priority],
    ["created", fmtTime(t.created_at)], ["run at", t.run_at ? fmtTime(t.run_at) : "at once"],
    ["waiting on", t.waiting_on || "—"],
    ["started", fmtTime(t.started_at)], ["finished", fmtTime(t.finished_at)], ["duration", taskDuration(t, Date.now())],
    ["deadline", fmtTime(t.deadline_at)], ["trace ID", t.trace_id], ["rule set", t.config_version || "—"],
  ];
  if (t.concurrency_key) fields.push(["concurrency key", t.concurrency_key]);
  if (t.state === "queued") fields.push(["waiting on", t.waiting_on ? t.waiting_on.replace("_", " ") : "a worker"]);
  $("task-fields").replaceChildren(...fields.flatMap(([k, v]) => [el("dt", { text: k }), el("dd", { text: fmtValue(v) })]));
  renderDeps(t.depends_on || []);
  const out = $("task-outcome");
  if (t.error) {
    out.replaceChildren(
      el("p", {}, el("span", { class: "label", text: "error " }), el("code", { class: "bad", id: "task-error-code", text: t.error.code })),
      el("p", { id: "task-error-message", text: t.error.message || "(no message)" }));
  } else if (t.result !== null && t.result !== undefined) {
    out.replaceChildren(el("p", { class: "label", text: "result" }),
      el("pre", { id: "task-result", class: "json", text: JSON.stringify(t.result, null, 2) }));
  } else {
    out.replaceChildren(el("p", { class: "muted", text: TERMINAL.has(t.state) ? "No result." : "Not finished yet." }));
  }
}

// renderDeps links the tasks this one depends on.
function renderDeps(ids) {
  const items = ids.slice(0, DEPS_SHOWN).map((id) => el("li", {}, el("a", { class: "mono", href: taskHref(id), text: id })));
  if (ids.length > DEPS_SHOWN) items.push(el("li", { class: "muted", text: "and " + (ids.length - DEPS_SHOWN) + " more" }));
  $("task-depends-on").replaceChildren(...items);
  show($("task-deps"), ids.length > 0);
}

function renderTimeline(events) {
  $("task-timeline").replaceChildren(...events.map((e) => el("li", { data: { to: e.to } },
    el("time", { text: fmtTime(e.at), title: e.at }),
    el("span", { class: "move" }, e.from ? stateBadge(e.from) : el("span", { class: "muted", text: "admitted" }), " → ", stateBadge(e.to)),
    el("span", { class: "muted small", text: "epoch " + e.epoch }),
    e.code ? el("code", { text: e.code }) : null)));
}

// renderEvidence shows evidence items as a table: one column per member
// of the items' bodies (at most eight), else the body as JSON.
function renderEvidence(items) {
  const table = $("task-evidence");
  const cols = [];
  for (const it of items) {
    if (it.body && typeof it.body === "object" && !Array.isArray(it.body)) {
      for (const k of Object.keys(it.body)) if (!cols.includes(k) && cols.length < 8) cols.push(k);
    }
  }
  const useBody = cols.length === 0;
  table.tHead.replaceChildren(el("tr", {}, el("th", { text: "#" }), el("th", { text: "attempt" }), el("th", { text: "kind" }),
    ...(useBody ? [el("th", { text: "body" })] : cols.map((c) => el("th", { text: c.replace(/_/g, " ") })))));
  table.tBodies[0].replaceChildren(...items.map((it, i) => el("tr", {},
    el("td", { class: "num", text: i + 1 }),
    el("td", { class: "num", text: it.attempt }),
    el("td", {}, el("code", { text: it.kind })),
    ...(useBody ? [el("td", { class: "mono", text: JSON.stringify(it.body) })] : cols.map((c) => evidenceCell(it.body && it.body[c]))))));
  show(table, items.length > 0);
  show($("evidence-empty"), items.length === 0);
}

function evidenceCell(v) {
  if (v === true) return el("td", { class: "pass", text: "✓ yes" });
  if (v === false) return el("td", { class: "fail", text: "✗ no" });
  return el("td", { text: fmtValue(v) });
}

async function cancelTask() {
  const id = taskId;
  const btn = $("task-cancel");
  const answer = $("task-cancel-answer");
  btn.disabled = true;
  try {
    const r = await api("POST", "/v1/tasks/" + encodeURIComponent(id) + "/cancel");
    const t = r.data;
    if (t.state === "cancelled" && (!t.error || t.error.code === "cancelled")) {
      say(answer, "Cancelled: the task is now cancelled.", "good");
    } else {
      say(answer, "The task had already finished (" + t.state + "); cancelling changed nothing.", "");
    }
  } catch (e) {
    say(answer, "Cancel refused — " + e.describe(), "bad");
    btn.disabled = false;
    return;
  }
  await loadTask(id);
}

async function retryTask() {
  const id = taskId;
  const btn = $("task-retry");
  const answer = $("task-cancel-answer");
  btn.disabled = true;
  try {
    const r = await api("POST", "/v1/tasks/" + encodeURIComponent(id) + "/retry");
    say(answer, "Retried: the task is " + r.data.state + " again, with its attempts renewed.", "good");
  } catch (e) {
    say(answer, "Retry refused — " + e.describe(), "bad");
    btn.disabled = false;
    return;
  }
  follow(navigation(), id);
}
