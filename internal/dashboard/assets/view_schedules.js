// Schedules (admin key): every periodic schedule with its next fire times,
// paused or active, with Pause and Resume; the last runs of the one chosen,
// with their tasks' states.

import { api } from "./api.js";
import { $, el, say, show } from "./dom.js";
import { fmtNumber, fmtTime, shortId, stateBadge } from "./format.js";
import { taskHref } from "./router.js";
import { adminList, fillTable } from "./admin_list.js";

const NEXT_SHOWN = 3; // next fire times per row

let chosen = null; // the schedule whose runs are shown

const list = adminList({
  name: "schedules",
  label: "Schedules",
  async fetch() {
    const list = (await api("GET", "/v1/admin/schedules")).data.schedules;
    let one = null;
    if (chosen && list.some((s) => s.name === chosen)) {
      one = (await api("GET", "/v1/admin/schedules/" + encodeURIComponent(chosen))).data;
    }
    return { list, one };
  },
  render({ list, one }) {
    fillTable("schedules", list.map(row));
    renderRuns(one);
  },
});
const load = list.load;
export const schedules = list.view;

function row(s) {
  const next = (s.next_fire_times || []).slice(0, NEXT_SHOWN);
  const action = s.paused ? "resume" : "pause";
  return el("tr", { data: { schedule: s.name, paused: String(s.paused) } },
    el("td", { class: "mono", text: s.name }),
    el("td", { text: s.tenant }),
    el("td", { class: "mono", text: s.workflow }),
    el("td", {}, el("code", { text: s.cron }), " ", el("span", { class: "muted small", text: s.time_zone })),
    el("td", { class: "next" }, ...(s.paused ? [el("span", { class: "muted", text: "paused" })] :
      next.map((t) => el("div", { class: "small", text: fmtTime(t), title: t })))),
    el("td", {}, el("span", { class: "badge " + (s.paused ? "off" : "on"), text: s.paused ? "paused" : "active" })),
    el("td", { class: "num", text: fmtNumber(s.fired) }),
    el("td", { text: s.last_fire_at ? fmtTime(s.last_fire_at) : "—" }),
    el("td", {},
      el("button", { type: "button", class: "small", data: { action }, text: s.paused ? "Resume" : "Pause",
        on: { click: () => setPaused(s.name, action) } }),
      " ",
      el("button", { type: "button", class: "small", data: { action: "runs" }, text: "Runs",
        on: { click: () => { chosen = s.name; load(); } } })));
}

function renderRuns(s) {
  const panel = $("schedule-runs");
  if (!s) {
    show(panel, false);
    return;
  }
  show(panel, true);
  $("schedule-runs-name").textContent = s.name;
  const runs = s.runs || [];
  $("schedule-runs-table").tBodies[0].replaceChildren(...runs.map((r) => el("tr", { data: { task: r.task_id } },
    el("td", { text: fmtTime(r.fire_at), title: r.fire_at }),
    el("td", {}, el("a", { class: "mono", href: taskHref(r.task_id), text: shortId(r.task_id), title: r.task_id })),
    el("td", {}, r.state ? stateBadge(r.state) : el("span", { class: "muted", text: "deleted" })))));
  show($("schedule-runs-table"), runs.length > 0);
  show($("schedule-runs-empty"), runs.length === 0);
}

async function setPaused(name, action) {
  const answer = $("schedules-answer");
  try {
    const r = await api("POST", "/v1/admin/schedules/" + encodeURIComponent(name) + "/" + action);
    say(answer, (action === "pause" ? "Paused " : "Resumed ") + name + " (" + r.status + ").", "good");
  } catch (e) {
    say(answer, (action === "pause" ? "Pause" : "Resume") + " refused — " + e.describe(), "bad");
  }
  await load();
}
