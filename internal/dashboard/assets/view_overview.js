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
const CHART_MINUTES = 10;
const CHART_BUCKET_S = 10;
// The chart's buckets by start (ms): the whole window is read when the
// page opens, then only the last minute at each refresh, so a refresh
// costs the store a minute of history, not ten.
const buckets = new Map();
let readAt = 0; // when the history was last read

function throughputPath(minutes) {
  return "/v1/admin/stats/throughput?minutes=" + minutes + "&bucket_seconds=" + CHART_BUCKET_S;
}

export const overview = {
  name: "overview",
  path: ["overview"],
  admin: true,
  wire() {},
  async open() {
    const nav = navigation();
    readAt = 0;
    await refresh();
    every(nav, EVERY_MS, refresh);
  },
};

async function refresh() {
  let stats, metrics, history;
  try {
    // On opening, and after refreshes were missed for most of a minute,
    // the whole window.
    const whole = Date.now() - readAt > 50000;
    const [s, text, h] = await Promise.all([api("GET", "/v1/admin/stats"), metricsText(),
      api("GET", throughputPath(whole ? CHART_MINUTES : 1))]);
    if (whole) buckets.clear();
    readAt = Date.now();
    stats = s.data;
    metrics = parseMetrics(text);
    history = h.data;
  } catch (e) {
    if (e instanceof APIError) flash("Overview: " + e.describe());
    return;
  }
  if (!showing("overview")) return;
  flash("");
  renderPools(stats, metrics);
  renderChart(history);
  renderRejections(metrics);
  renderTenantUse(stats.tenants);
  $("overview-updated").textContent = "updated " + fmtTime(new Date().toISOString());
}

// renderChart draws the server's history: each bucket's rate at its end,
// the last one (still filling) over the part of it that has passed.
function renderChart(history) {
  const now = Date.parse(history.now);
  const size = history.bucket_seconds * 1000;
  for (const b of history.buckets) buckets.set(Date.parse(b.start), b);
  for (const start of buckets.keys()) {
    if (start + size <= now - CHART_MINUTES * 60000) buckets.delete(start);
  }
  const rates = [];
  let ok = 0, bad = 0;
  for (const b of [...buckets.keys()].sort((x, y) => x - y).map((k) => buckets.get(k))) {
    const start = Date.parse(b.start);
    const end = Math.min(start + size, now);
    const failed = b.failed + b.timed_out;
    ok += b.succeeded;
    bad += failed;
    if (end <= start) continue;
    const dt = Math.max(end - start, 1000) / 1000;
    rates.push({ t: end, ok: b.succeeded / dt, bad: failed / dt });
  }
  const box = $("chart");
  drawChart(box, rates, now, CHART_MINUTES * 60000);
  box.dataset.succeeded = String(ok);
  box.dataset.failed = String(bad);
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
