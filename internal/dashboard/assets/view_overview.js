// Overview (admin key): the pools' capacity in use, the throughput chart,
// admission rejections by code, each tenant's quota in use.

import { api, APIError, metricsText } from "./api.js";
import { drawChart } from "./chart.js";
import { $, el, flash, show } from "./dom.js";
import { ago, fmtNumber, fmtTime, stateBadge, TERMINAL } from "./format.js";
import { parseMetrics, sumMetric } from "./metrics.js";
import { every, navigation } from "./refresh.js";
import { showing } from "./router.js";

const EVERY_MS = 5000;
const CHART_SAMPLES = 121; // 10 minutes of 5 s samples

const samples = []; // {t, ok, bad}: the terminal counters at time t

export const overview = {
  name: "overview",
  path: ["overview"],
  admin: true,
  wire() {},
  async open() {
    const nav = navigation();
    await refresh();
    every(nav, EVERY_MS, refresh);
  },
};

async function refresh() {
  let stats, metrics;
  try {
    const [s, text] = await Promise.all([api("GET", "/v1/admin/stats"), metricsText()]);
    stats = s.data;
    metrics = parseMetrics(text);
  } catch (e) {
    if (e instanceof APIError) flash("Overview: " + e.describe());
    return;
  }
  if (!showing("overview")) return;
  flash("");
  const now = Date.now();
  const last = samples[samples.length - 1];
  if (last && now - last.t < EVERY_MS / 2) samples.pop(); // a refresh soon after another
  samples.push({
    t: now,
    ok: sumMetric(metrics, "docket_task_terminal_total", { state: "succeeded" }),
    bad: sumMetric(metrics, "docket_task_terminal_total", { state: ["failed", "timed_out"] }),
  });
  if (samples.length > CHART_SAMPLES) samples.splice(0, samples.length - CHART_SAMPLES);
  renderPools(stats, metrics);
  drawChart($("chart"), samples, (CHART_SAMPLES - 1) * EVERY_MS);
  renderRejections(metrics);
  renderTenantUse(stats.tenants);
  $("overview-updated").textContent = "updated " + fmtTime(new Date(now).toISOString());
}

function meter(used, limit) {
  const pct = limit > 0 ? Math.min(100, (used / limit) * 100) : 0;
  const bar = el("span", { class: "meter-fill" + (pct >= 90 ? " hot" : pct >= 70 ? " warm" : "") });
  bar.style.width = pct.toFixed(1) + "%";
  return el("span", { class: "meter", title: limit > 0 ? pct.toFixed(1) + "%" : "unlimited" }, bar);
}

function renderPools(stats, metrics) {
  const cards = $("pool-cards");
  cards.replaceChildren();
  for (const p of stats.pools) {
    const cap = p.capacity > 0 ? fmtNumber(p.capacity) : "unlimited";
    const terminal = [...TERMINAL].map((st) =>
      el("li", {}, stateBadge(st), " ", fmtNumber(sumMetric(metrics, "docket_task_terminal_total", { pool: p.name, state: st }))));
    cards.append(el("div", { class: "card", data: { pool: p.name } },
      el("h2", { text: p.name + " pool" }),
      el("div", { class: "capacity" },
        el("span", { class: "big", text: fmtNumber(p.in_flight) }), " in flight of ", cap),
      meter(p.in_flight, p.capacity),
      el("dl", { class: "counts" },
        el("dt", { text: "queued" }), el("dd", { text: fmtNumber(p.queued) }),
        el("dt", { text: "running" }), el("dd", { text: fmtNumber(p.running) }),
        el("dt", { text: "workers busy" }), el("dd", { text: fmtNumber(p.busy) + " / " + fmtNumber(p.workers) }),
        el("dt", { text: "oldest queued" }), el("dd", { text: p.oldest_queued_at ? ago(p.oldest_queued_at) : "—" })),
      el("p", { class: "muted small", text: "Finished on this node since it started:" }),
      el("ul", { class: "terminal" }, ...terminal)));
  }
}

function renderRejections(metrics) {
  const rows = metrics.filter((m) => m.name === "docket_admission_rejections_total" && m.value > 0);
  rows.sort((a, b) => b.value - a.value);
  $("rejections").tBodies[0].replaceChildren(...rows.map((r) =>
    el("tr", {}, el("td", {}, el("code", { text: r.labels.code || "?" })), el("td", { class: "num", text: fmtNumber(r.value) }))));
  show($("rejections-empty"), rows.length === 0);
}

function renderTenantUse(tenants) {
  $("overview-tenants").tBodies[0].replaceChildren(...tenants.map((t) => el("tr", {},
    el("td", { text: t.id }),
    el("td", { class: "num", text: fmtNumber(t.in_flight) }),
    el("td", { class: "num", text: t.max_in_flight > 0 ? fmtNumber(t.max_in_flight) : "unlimited" }),
    el("td", { class: "use" }, meter(t.in_flight, t.max_in_flight)),
    el("td", { class: "num", text: t.weight }))));
}
