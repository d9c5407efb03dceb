// Workers (admin key): the remote workers any node saw in the last day,
// most recently seen first. Nodes write what they saw every 2 s.

import { api, APIError } from "./api.js";
import { $, el, flash, show } from "./dom.js";
import { ago, fmtNumber, fmtTime } from "./format.js";
import { every, latestOnly, navigation } from "./refresh.js";
import { showing } from "./router.js";

const EVERY_MS = 5000;

const loads = latestOnly();

export const workers = {
  name: "workers",
  path: ["workers"],
  admin: true,
  wire() {},
  async open() {
    const nav = navigation();
    await load();
    every(nav, EVERY_MS, load);
  },
};

async function load() {
  const latest = loads();
  let list;
  try {
    list = (await api("GET", "/v1/admin/workers")).data.workers;
  } catch (e) {
    if (e instanceof APIError && latest()) flash("Workers: " + e.describe());
    return;
  }
  if (!showing("workers") || !latest()) return;
  flash("");
  $("workers-table").tBodies[0].replaceChildren(...list.map(row));
  show($("workers-table"), list.length > 0);
  show($("workers-empty"), list.length === 0);
  $("workers-updated").textContent = "updated " + fmtTime(new Date().toISOString());
}

function row(w) {
  return el("tr", { data: { worker: w.id, key: w.key_id, connected: String(!!w.connected) } },
    el("td", { class: "mono", text: w.id }),
    el("td", { class: "mono", text: w.key_id }),
    el("td", { text: w.all_tenants ? "all tenants" : w.tenant }),
    el("td", { text: (w.workflows || []).join(", ") || "—" }),
    el("td", { class: "num", text: w.slots > 0 ? fmtNumber(w.slots) : "—" }),
    el("td", { class: "num", text: fmtNumber(w.leases) }),
    el("td", { text: ago(w.last_seen_at), title: fmtTime(w.last_seen_at) }),
    el("td", { class: "mono", text: w.sdk || "—" }),
    el("td", {}, el("span", { class: "badge " + (w.connected ? "on" : "off"), text: w.connected ? "connected" : "gone" })));
}
