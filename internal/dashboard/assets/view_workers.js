// Workers (admin key): the remote workers any node saw in the last day,
// most recently seen first. Nodes write what they saw every 2 s.

import { api } from "./api.js";
import { el } from "./dom.js";
import { ago, fmtNumber, fmtTime } from "./format.js";
import { adminList, fillTable } from "./admin_list.js";

export const workers = adminList({
  name: "workers",
  label: "Workers",
  fetch: async () => (await api("GET", "/v1/admin/workers")).data.workers,
  render: (list) => fillTable("workers", list.map(row)),
}).view;

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
