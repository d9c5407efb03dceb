// An admin view of one list the server keeps (workers, workflows,
// schedules): fetched on open and every 5 s while on screen, an API
// refusal flashed, stale answers dropped (latestOnly), the table and its
// "none yet" line filled, and the time of the last answer shown.
//
//	const list = adminList({ name: "workers", label: "Workers",
//	  fetch: async () => (await api("GET", "/v1/admin/workers")).data.workers,
//	  render: (list) => fillTable("workers", list.map(row)) });
//	export const workers = list.view;

import { APIError } from "./api.js";
import { $, flash, show } from "./dom.js";
import { fmtTime } from "./format.js";
import { every, latestOnly, navigation } from "./refresh.js";
import { showing } from "./router.js";

const EVERY_MS = 5000;

// adminList makes the view and its load (to call after an action).
export function adminList({ name, label, fetch, render, wire = () => {} }) {
  const loads = latestOnly();
  async function load() {
    const latest = loads();
    let data;
    try {
      data = await fetch();
    } catch (e) {
      if (e instanceof APIError && latest()) flash(label + ": " + e.describe());
      return;
    }
    if (!showing(name) || !latest()) return;
    flash("");
    render(data);
    $(name + "-updated").textContent = "updated " + fmtTime(new Date().toISOString());
  }
  const view = {
    name,
    path: [name],
    admin: true,
    wire,
    async open() {
      const nav = navigation();
      await load();
      every(nav, EVERY_MS, load);
    },
  };
  return { view, load };
}

// fillTable puts rows in the table id-table, and shows it, or the id-empty
// line when there are none.
export function fillTable(id, rows) {
  $(id + "-table").tBodies[0].replaceChildren(...rows);
  show($(id + "-table"), rows.length > 0);
  show($(id + "-empty"), rows.length === 0);
}
