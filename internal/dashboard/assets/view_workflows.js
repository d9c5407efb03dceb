// Workflows (admin key): the registered workflows, built-in (compiled into
// the server) and remote (run by remote workers, docs/worker-protocol.md);
// a form to register a remote one and a Remove button for each, both
// showing the API's answer.

import { api } from "./api.js";
import { $, el, say } from "./dom.js";
import { fmtDuration, pausedBadge } from "./format.js";
import { adminList, fillTable } from "./admin_list.js";

const list = adminList({
  name: "workflows",
  label: "Workflows",
  fetch: async () => (await api("GET", "/v1/admin/workflows")).data.workflows,
  render: (list) => fillTable("workflows", list.map(row)),
  wire() {
    $("workflow-form").addEventListener("submit", register);
  },
});
const load = list.load;
export const workflows = list.view;

// timeout and attempts are a workflow's defaults; 0 is the server's.
function timeout(ms) {
  return ms > 0 ? fmtDuration(ms) : "server default";
}

function attempts(n) {
  return n > 0 ? String(n) : "server default";
}

// flow is a workflow's pause (a badge, saying whether the pause refuses
// submissions), rate limit and concurrency per key, for its cell.
function flow(w) {
  const parts = [];
  if (w.rate_per_second != null) parts.push(w.rate_per_second + "/s (burst " + w.burst + ")");
  if (w.concurrency_per_key > 1) parts.push(w.concurrency_per_key + " per key");
  if (!w.paused) return [parts.length ? parts.join(" · ") : "—"];
  return [pausedBadge(w.refuse_submissions === true), parts.length ? " · " + parts.join(" · ") : ""];
}

function row(w) {
  let action = null;
  if (w.remote) {
    action = el("button", { type: "button", className: "danger small", text: "Remove" });
    action.addEventListener("click", () => remove(w.name, action));
  }
  return el("tr", { data: { workflow: w.name, remote: String(!!w.remote) } },
    el("td", { class: "mono", text: w.name }),
    el("td", {}, el("span", { class: "badge " + (w.remote ? "remote" : "builtin"), text: w.remote ? "remote" : "built-in" })),
    el("td", { text: w.pool }),
    el("td", { class: "num", text: timeout(w.timeout_ms), title: w.timeout_ms > 0 ? w.timeout_ms + " ms" : null }),
    el("td", { class: "num", text: attempts(w.max_attempts) }),
    el("td", { class: "flow" }, ...flow(w)),
    el("td", {}, action));
}

async function register(ev) {
  ev.preventDefault();
  const answer = $("workflow-answer");
  say(answer, "");
  const name = $("workflow-name").value.trim();
  const body = { pool: $("workflow-pool").value };
  if ($("workflow-timeout").value !== "") body.timeout_ms = Number($("workflow-timeout").value);
  if ($("workflow-attempts").value !== "") body.max_attempts = Number($("workflow-attempts").value);
  try {
    const r = await api("PUT", "/v1/admin/workflows/" + encodeURIComponent(name), body);
    const w = r.data;
    say(answer, "Registered " + w.name + " (" + r.status + "): pool " + w.pool + ", default timeout " + timeout(w.timeout_ms) +
      ", max attempts " + attempts(w.max_attempts) + ". Remote workers can claim its tasks now.", "good");
    $("workflow-name").value = "";
  } catch (e) {
    say(answer, "Refused — " + e.withStatus(), "bad");
    return;
  }
  load();
}

async function remove(name, button) {
  const answer = $("workflow-answer");
  button.disabled = true;
  try {
    const r = await api("DELETE", "/v1/admin/workflows/" + encodeURIComponent(name));
    say(answer, "Removed " + name + " (" + r.status + "): new submissions of it are refused (unknown_workflow); its tasks stay.", "good");
  } catch (e) {
    button.disabled = false;
    say(answer, "Remove of " + name + " refused — " + e.withStatus(), "bad");
    return;
  }
  load();
}
