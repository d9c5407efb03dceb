// Formatting of the API's values for the page: times, durations, numbers,
// task IDs, state badges.

import { el } from "./dom.js";

export const TERMINAL = new Set(["succeeded", "failed", "cancelled", "timed_out"]);

function pad(n) {
  return String(n).padStart(2, "0");
}

export function fmtTime(iso) {
  if (!iso) return "—";
  const d = new Date(iso);
  if (isNaN(d)) return String(iso);
  return d.getFullYear() + "-" + pad(d.getMonth() + 1) + "-" + pad(d.getDate()) + " " +
    pad(d.getHours()) + ":" + pad(d.getMinutes()) + ":" + pad(d.getSeconds());
}

// fmtDuration writes a duration in whole seconds and larger units.
export function fmtDuration(ms) {
  if (ms < 0) ms = 0;
  const s = Math.round(ms / 1000);
  if (s < 60) return s + " s";
  if (s < 3600) return Math.floor(s / 60) + " min" + (s % 60 ? " " + (s % 60) + " s" : "");
  if (s < 86400) return Math.floor(s / 3600) + " h " + Math.floor((s % 3600) / 60) + " min";
  return Math.floor(s / 86400) + " d " + Math.floor((s % 86400) / 3600) + " h";
}

// fmtElapsed is fmtDuration with milliseconds for short spans: most tasks
// take less than a second.
export function fmtElapsed(ms) {
  if (ms < 0) ms = 0;
  if (ms < 1000) return Math.round(ms) + " ms";
  if (ms < 10000) return (ms / 1000).toFixed(1) + " s";
  return fmtDuration(ms);
}

export function ago(iso) {
  if (!iso) return "never";
  return fmtDuration(Date.now() - new Date(iso).getTime()) + " ago";
}

export function fmtNumber(n) {
  return Number(n).toLocaleString("en-US");
}

export function fmtValue(v) {
  if (v === null || v === undefined) return "—";
  if (typeof v === "string") return v;
  return JSON.stringify(v);
}

// shortId is the end of a task ID. IDs are UUIDv7: tasks made in the same
// millisecond share their first characters and differ in the last ones.
export function shortId(id) {
  const s = String(id);
  return s.length > 12 ? "…" + s.slice(-8) : s;
}

// taskDuration is how long a task ran (finished − started), how long it
// has been running, or "—" when it never started.
export function taskDuration(t, now) {
  const started = t.started_at ? new Date(t.started_at).getTime() : NaN;
  if (isNaN(started)) return "—";
  if (t.finished_at) {
    const finished = new Date(t.finished_at).getTime();
    return isNaN(finished) ? "—" : fmtElapsed(finished - started);
  }
  if (t.state === "running") return "running for " + fmtElapsed(now - started);
  return "—";
}

// pausedBadge marks a paused tenant or workflow, and says when its pause
// refuses submissions (409 submissions_paused) rather than queueing them.
export function pausedBadge(refusing) {
  return el("span", { class: "badge paused" + (refusing ? " refusing" : ""), text: refusing ? "paused · refusing submissions" : "paused" });
}

export function stateBadge(state) {
  return el("span", { class: "state state-" + String(state).replace(/[^a-z_]/g, ""), text: state });
}
