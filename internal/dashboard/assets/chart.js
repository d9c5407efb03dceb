// The overview's line chart of tasks finished per second, drawn as SVG.

import { fmtDuration } from "./format.js";

const W = 600, H = 170, L = 44, R = 8, T = 10, B = 24;
const NS = "http://www.w3.org/2000/svg";

function niceMax(v) {
  const mag = Math.pow(10, Math.floor(Math.log10(v)));
  for (const m of [1, 2, 5, 10]) if (m * mag >= v) return m * mag;
  return 10 * mag;
}

function formatRate(v) {
  return (v >= 10 ? v.toFixed(0) : v.toFixed(1)) + "/s";
}

// drawChart draws finish rates ({t, ok, bad}: tasks per second in the
// period that ends at time t) in box; the x axis spans span ms up to end.
export function drawChart(box, rates, end, span) {
  const svg = document.createElementNS(NS, "svg");
  svg.setAttribute("viewBox", "0 0 " + W + " " + H);
  svg.setAttribute("role", "img");
  svg.setAttribute("aria-label", "tasks finished per second");
  const mk = (tag, attrs, text) => {
    const n = document.createElementNS(NS, tag);
    for (const [k, v] of Object.entries(attrs)) n.setAttribute(k, String(v));
    if (text !== undefined) n.textContent = text;
    svg.append(n);
    return n;
  };
  const top = niceMax(Math.max(1, ...rates.map((r) => Math.max(r.ok, r.bad))));
  const x = (t) => L + ((t - (end - span)) / span) * (W - L - R);
  const y = (v) => T + (1 - v / top) * (H - T - B);
  for (const f of [0, 0.5, 1]) {
    mk("line", { x1: L, x2: W - R, y1: y(top * f), y2: y(top * f), class: "grid" });
    mk("text", { x: L - 6, y: y(top * f) + 4, "text-anchor": "end", class: "axis" }, formatRate(top * f));
  }
  mk("text", { x: L, y: H - 6, class: "axis" }, fmtDuration(span) + " ago");
  mk("text", { x: W - R, y: H - 6, "text-anchor": "end", class: "axis" }, "now");
  if (rates.length === 0) {
    mk("text", { x: (W + L) / 2, y: H / 2, "text-anchor": "middle", class: "axis" }, "no history yet");
  }
  for (const [field, cls] of [["ok", "line-ok"], ["bad", "line-bad"]]) {
    if (rates.length === 0) continue;
    const pts = rates.map((r) => x(r.t).toFixed(1) + "," + y(r[field]).toFixed(1)).join(" ");
    mk("polyline", { points: pts, class: cls, fill: "none" });
    if (rates.length <= 40) {
      for (const r of rates) mk("circle", { cx: x(r.t).toFixed(1), cy: y(r[field]).toFixed(1), r: 2.5, class: cls + " dot" });
    }
  }
  box.dataset.points = String(rates.length);
  box.replaceChildren(svg);
}
