// Tasks: the tenant's tasks, newest first, a keyset page at a time,
// filtered by the API (state, pool, workflow); a form to submit one and a
// search by task ID. Queued tasks whose run_at is ahead show as scheduled.
// Selected tasks can be retried or cancelled one by one, and every task
// that matches the filter at once (a bulk job, POST /v1/tasks/bulk).

import { api, APIError } from "./api.js";
import { $, el, flash, say, show } from "./dom.js";
import { fmtTime, shortId, stateBadge, taskDuration } from "./format.js";
import { every, latestOnly, navigation } from "./refresh.js";
import { showing, taskHref } from "./router.js";
import { isAdmin } from "./session.js";

const EVERY_MS = 3000;

const paging = { after: "", stack: [], next: "" };
const loads = latestOnly();
const workflowLoads = latestOnly();
let inputEdited = false;
// examples maps a workflow name to the example input the page's workflow
// list carries (data-input), read once: the list is rebuilt from the API.
const examples = new Map();

export const tasks = {
  name: "tasks",
  path: ["tasks"],
  admin: false,
  wire,
  async open() {
    const nav = navigation();
    if (isAdmin()) loadWorkflowNames();
    await loadTasks();
    every(nav, EVERY_MS, () => {
      if ($("auto-refresh").checked) loadTasks();
    });
  },
};

function wire() {
  for (const o of $("workflows").options) {
    if (o.dataset.input) examples.set(o.value, o.dataset.input);
  }
  $("new-task-toggle").addEventListener("click", () => {
    const f = $("new-task");
    f.hidden = !f.hidden;
    if (!f.hidden) fillExample();
  });
  $("new-workflow").addEventListener("change", fillExample);
  $("new-input").addEventListener("input", () => {
    inputEdited = $("new-input").value.trim() !== "";
  });
  $("new-task").addEventListener("submit", submitTask);
  $("task-search").addEventListener("submit", searchTask);
  $("select-page").addEventListener("change", () => {
    for (const c of document.querySelectorAll("#tasks-table tbody input.select")) c.checked = $("select-page").checked;
  });
  $("bulk-retry-selected").addEventListener("click", () => actOnSelected("retry"));
  $("bulk-cancel-selected").addEventListener("click", () => actOnSelected("cancel"));
  $("bulk-retry-all").addEventListener("click", () => actOnMatching("retry"));
  $("bulk-cancel-all").addEventListener("click", () => actOnMatching("cancel"));
  $("task-filters").addEventListener("submit", (ev) => {
    ev.preventDefault();
    resetPaging();
    loadTasks();
  });
  for (const id of ["filter-state", "filter-pool", "filter-limit"]) {
    $(id).addEventListener("change", () => {
      resetPaging();
      loadTasks();
    });
  }
  $("page-next").addEventListener("click", () => {
    if (!paging.next) return;
    paging.stack.push(paging.after);
    paging.after = paging.next;
    loadTasks();
  });
  $("page-prev").addEventListener("click", () => {
    paging.after = paging.stack.pop() || "";
    loadTasks();
  });
  $("page-first").addEventListener("click", () => {
    resetPaging();
    loadTasks();
  });
}

function resetPaging() {
  paging.after = "";
  paging.stack = [];
}

function taskQuery() {
  const q = new URLSearchParams();
  const state = $("filter-state").value;
  const pool = $("filter-pool").value;
  const workflow = $("filter-workflow").value.trim();
  if (state) q.set("state", state);
  if (pool) q.set("pool", pool);
  if (workflow) q.set("workflow", workflow);
  q.set("limit", String(Number($("filter-limit").value) || 50));
  if (paging.after) q.set("after", paging.after);
  return "/v1/tasks?" + q.toString();
}

// loadTasks reads the current page; the API does every filter. Only the
// latest call renders: an auto-refresh of page 1 answered after a click
// to page 2 would otherwise put page 1's rows under the label "page 2".
async function loadTasks() {
  const latest = loads();
  let page;
  try {
    page = (await api("GET", taskQuery())).data;
  } catch (e) {
    if (e instanceof APIError && latest()) flash("Tasks: " + e.describe());
    return;
  }
  if (!showing("tasks") || !latest()) return;
  flash("");
  paging.next = page.next || "";
  renderTasks(page.tasks);
  $("page-label").textContent = "page " + (paging.stack.length + 1);
  $("page-prev").disabled = paging.stack.length === 0;
  $("page-first").disabled = paging.stack.length === 0;
  $("page-next").disabled = !paging.next;
}

function renderTasks(list) {
  const now = Date.now();
  const selected = new Set(Array.from(document.querySelectorAll("#tasks-table tbody input.select:checked")).map((c) => c.dataset.id));
  $("tasks-table").tBodies[0].replaceChildren(...list.map((t) => {
    const scheduled = t.state === "queued" && t.run_at && Date.parse(t.run_at) > now;
    const row = el("tr", { data: { id: t.id, state: t.state, scheduled: String(!!scheduled) } },
      el("td", {}, el("input", { type: "checkbox", class: "select", data: { id: t.id }, checked: selected.has(t.id) })),
      el("td", { class: "mono" }, el("a", { href: taskHref(t.id), title: t.id, text: shortId(t.id) })),
      el("td", { text: t.workflow }),
      el("td", { text: t.pool }),
      el("td", {}, scheduled ? el("span", { class: "badge scheduled", title: t.run_at, text: "scheduled" }) : stateBadge(t.state),
        scheduled ? el("span", { class: "muted small run-at", text: " at " + fmtTime(t.run_at) })
          : t.waiting_on ? el("span", { class: "muted small waiting", text: " waiting on " + t.waiting_on }) : null),
      el("td", { class: "num", text: t.attempt + "/" + t.max_attempts }),
      el("td", { text: fmtTime(t.created_at) }),
      el("td", { class: "num duration", text: taskDuration(t, now) }),
      el("td", { text: fmtTime(t.finished_at) }),
      el("td", {}, t.error ? el("code", { text: t.error.code }) : ""));
    row.addEventListener("click", (ev) => {
      if (ev.target.closest("a") || ev.target.closest("input")) return;
      location.hash = taskHref(t.id);
    });
    return row;
  }));
  show($("tasks-empty"), list.length === 0);
}

// searchTask opens the task whose ID was typed or pasted (a whole ID: the
// API reads tasks by ID, not by prefix).
function searchTask(ev) {
  ev.preventDefault();
  const id = $("task-search-id").value.trim().replace(/^#?\/?tasks\//, "");
  if (!id) return;
  $("task-search-id").value = "";
  location.hash = taskHref(id);
}

// loadWorkflowNames fills the page's workflow list (for the filter and the
// form) with the registered workflows, built-in and remote: an admin key
// can read them. A member key keeps the list the page came with.
async function loadWorkflowNames() {
  const latest = workflowLoads();
  let list;
  try {
    list = (await api("GET", "/v1/admin/workflows")).data.workflows;
  } catch (e) {
    return; // the list only helps typing; the fields take any name
  }
  if (!latest()) return;
  $("workflows").replaceChildren(...list.map((w) => el("option", {
    value: w.name,
    label: (w.remote ? "remote, " : "") + w.pool,
    data: examples.has(w.name) ? { input: examples.get(w.name) } : {},
  })));
}

function randomKey() {
  const b = new Uint8Array(12);
  crypto.getRandomValues(b);
  return "ui-" + Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");
}

// fillExample puts the chosen workflow's example input in the form, unless
// the user has typed one.
function fillExample() {
  if (inputEdited) return;
  const raw = examples.get($("new-workflow").value.trim());
  let text = "";
  if (raw) {
    try {
      text = JSON.stringify(JSON.parse(raw), null, 2);
    } catch (e) {
      text = raw;
    }
  }
  $("new-input").value = text;
}

async function submitTask(ev) {
  ev.preventDefault();
  const answer = $("new-answer");
  let input;
  const raw = $("new-input").value.trim();
  try {
    input = raw === "" ? null : JSON.parse(raw);
  } catch (e) {
    say(answer, "The input is not JSON: " + e.message, "bad");
    return;
  }
  const body = { workflow: $("new-workflow").value.trim(), input };
  if ($("new-pool").value) body.pool = $("new-pool").value;
  const prio = Number($("new-priority").value);
  if (prio) body.priority = prio;
  const idem = $("new-idem").value.trim() || randomKey();
  try {
    const r = await api("POST", "/v1/tasks", body, { "Idempotency-Key": idem });
    const t = r.data;
    answer.replaceChildren(
      (r.status === 201 ? "Created " : "Replayed (same key, same request): "),
      el("a", { href: taskHref(t.id), text: t.id }), " (idempotency key " + idem + ")");
    answer.className = "answer good";
    answer.hidden = false;
    $("new-idem").value = "";
    resetPaging();
    loadTasks();
  } catch (e) {
    say(answer, "Refused — " + e.describe(), "bad");
  }
}

// actOnSelected retries or cancels the selected tasks, one call each.
async function actOnSelected(action) {
  const answer = $("tasks-bulk-answer");
  const ids = Array.from(document.querySelectorAll("#tasks-table tbody input.select:checked")).map((c) => c.dataset.id);
  if (ids.length === 0) {
    say(answer, "Select tasks first.", "");
    return;
  }
  let done = 0;
  const refused = [];
  for (const id of ids) {
    try {
      await api("POST", "/v1/tasks/" + encodeURIComponent(id) + "/" + action);
      done++;
    } catch (e) {
      refused.push(shortId(id) + " " + (e instanceof APIError ? e.code : "error"));
    }
  }
  say(answer, (action === "retry" ? "Retried " : "Cancelled ") + done + " of " + ids.length +
    (refused.length ? "; refused: " + refused.join(", ") : "") + ".", refused.length ? "bad" : "good");
  for (const c of document.querySelectorAll("#tasks-table input.select, #select-page")) c.checked = false;
  loadTasks();
}

// actOnMatching starts a bulk job on every task the filter matches (not
// only this page) and follows it until it ends.
async function actOnMatching(action) {
  const answer = $("tasks-bulk-answer");
  const filter = {};
  const state = $("filter-state").value;
  const pool = $("filter-pool").value;
  const workflow = $("filter-workflow").value.trim();
  if (state) filter.state = state;
  if (pool) filter.pool = pool;
  if (workflow) filter.workflow = workflow;
  let job;
  try {
    job = (await api("POST", "/v1/tasks/bulk", { action, filter })).data;
  } catch (e) {
    say(answer, "Bulk " + action + " refused — " + e.describe(), "bad");
    return;
  }
  for (;;) {
    say(answer, "Bulk " + action + " " + job.state + ": " + job.done + " done, " + job.skipped + " skipped, " +
      job.failed + " refused, of " + job.matched + " matched.", job.state === "running" ? "" : "good");
    if (job.state !== "running") break;
    await new Promise((r) => setTimeout(r, 500));
    try {
      job = (await api("GET", "/v1/bulk/" + encodeURIComponent(job.id))).data;
    } catch (e) {
      say(answer, "Bulk job " + job.id + ": " + e.describe(), "bad");
      return;
    }
  }
  answer.dataset.state = job.state;
  loadTasks();
}
