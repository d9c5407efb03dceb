// Dead letters: the failed tasks grouped by tenant, workflow and error
// code (an admin key sees every tenant's), with a bulk retry or discard
// (delete now) per group, followed until the bulk job ends.

import { api, APIError } from "./api.js";
import { $, el, flash, say, show } from "./dom.js";
import { fmtNumber, fmtTime } from "./format.js";
import { every, latestOnly, navigation } from "./refresh.js";
import { showing } from "./router.js";
import { isAdmin } from "./session.js";

const EVERY_MS = 2000;

const loads = latestOnly();

// The table is redrawn every EVERY_MS: what a click started must outlive
// the row it was made on. armed is the group whose discard waits for its
// confirming click, busy the groups with a bulk action under way.
let armed = null;
const busy = new Set();

function groupKey(g) {
  return [g.tenant, g.workflow, g.error_code || ""].join("\u0000");
}

export const deadletters = {
  name: "deadletters",
  path: ["dead-letters"],
  admin: false,
  wire() {},
  async open() {
    const nav = navigation();
    armed = null;
    say($("deadletters-answer"), "");
    await load();
    every(nav, EVERY_MS, load);
  },
};

async function load() {
  const latest = loads();
  let groups;
  try {
    groups = (await api("GET", isAdmin() ? "/v1/admin/dead-letters" : "/v1/tasks/dead-letters")).data.groups;
  } catch (e) {
    if (e instanceof APIError && latest()) flash("Dead letters: " + e.describe());
    return;
  }
  if (!showing("deadletters") || !latest()) return;
  flash("");
  $("deadletters-table").tBodies[0].replaceChildren(...groups.map(row));
  show($("deadletters-table"), groups.length > 0);
  show($("deadletters-empty"), groups.length === 0);
  $("deadletters-updated").textContent = "updated " + fmtTime(new Date().toISOString());
}

function row(g) {
  const key = groupKey(g);
  const discard = el("button", { type: "button", class: "danger", text: "Discard" });
  if (armed === key) {
    discard.dataset.armed = "1";
    discard.textContent = "Confirm discard";
  }
  discard.addEventListener("click", () => {
    if (discard.dataset.armed !== "1") {
      armed = key;
      discard.dataset.armed = "1";
      discard.textContent = "Confirm discard";
      return;
    }
    armed = null;
    bulk("delete", g, discard);
  });
  const retry = el("button", { type: "button", text: "Retry" });
  retry.addEventListener("click", () => bulk("retry", g, retry));
  retry.disabled = discard.disabled = busy.has(key);
  return el("tr", { data: { workflow: g.workflow, code: g.error_code, tenant: g.tenant } },
    el("td", { text: g.tenant }),
    el("td", { class: "mono", text: g.workflow }),
    el("td", {}, el("code", { text: g.error_code || "—" })),
    el("td", { class: "num", text: fmtNumber(g.count) }),
    el("td", { text: fmtTime(g.oldest_failed_at) }),
    el("td", { text: fmtTime(g.newest_failed_at) }),
    el("td", {}, retry, " ", discard));
}

// bulk starts a bulk action on the group's failed tasks and follows it.
async function bulk(action, g, btn) {
  const key = groupKey(g);
  busy.add(key);
  btn.disabled = true;
  try {
    await follow(action, g, btn);
  } finally {
    busy.delete(key);
  }
  await load();
}

// follow starts the bulk job and shows its progress until it ends.
async function follow(action, g, btn) {
  const answer = $("deadletters-answer");
  const filter = { state: "failed", workflow: g.workflow };
  if (g.error_code) filter.error_code = g.error_code;
  const admin = isAdmin();
  if (admin) filter.tenant = g.tenant;
  let job;
  try {
    job = (await api("POST", admin ? "/v1/admin/bulk" : "/v1/tasks/bulk", { action, filter })).data;
  } catch (e) {
    say(answer, (action === "retry" ? "Retry" : "Discard") + " refused — " + e.describe(), "bad");
    btn.disabled = false;
    return;
  }
  const path = (admin ? "/v1/admin/bulk/" : "/v1/bulk/") + encodeURIComponent(job.id);
  for (;;) {
    say(answer, describe(job), job.state === "running" ? "" : "good");
    if (job.state !== "running") break;
    await new Promise((r) => setTimeout(r, 500));
    try {
      job = (await api("GET", path)).data;
    } catch (e) {
      say(answer, "Bulk job " + job.id + ": " + e.describe(), "bad");
      return;
    }
  }
  answer.dataset.job = job.id;
  answer.dataset.state = job.state;
}

function describe(job) {
  const verb = job.action === "retry" ? "retried" : job.action === "delete" ? "discarded" : "cancelled";
  return "Bulk " + job.action + " " + job.state + ": " + fmtNumber(job.done) + " " + verb + ", " +
    fmtNumber(job.skipped) + " skipped, " + fmtNumber(job.failed) + " refused, of " + fmtNumber(job.matched) + " matched.";
}
