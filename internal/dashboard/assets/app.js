// Docket's operator dashboard: a page over the v1 API, no framework, no
// build step. This module signs in and out and starts the router; each
// view is a module of its own (view_*.js).
//
// Rules every module keeps:
// - The API key lives in sessionStorage only and travels only in the
//   Authorization header of fetch calls: never in a URL, a cookie or a log
//   line of the browser (session.js, api.js).
// - Everything shown comes from the API and may carry client data: it is
//   put on the page with textContent and createElement, never as HTML
//   (dom.js).
// - Every call is one indexed, bounded API request (lists carry a limit).

import { api, onRefused } from "./api.js";
import { $, flash, show } from "./dom.js";
import { navigated } from "./refresh.js";
import { home, register, route, showView } from "./router.js";
import { forgetKey, keepKey, session, storedKey } from "./session.js";
import { admin } from "./view_admin.js";
import { deadletters } from "./view_deadletters.js";
import { overview } from "./view_overview.js";
import { schedules } from "./view_schedules.js";
import { task } from "./view_task.js";
import { tasks } from "./view_tasks.js";
import { workers } from "./view_workers.js";
import { workflows } from "./view_workflows.js";

const views = [overview, tasks, task, deadletters, workflows, workers, schedules, admin];

// detectRole checks the key (a one-task list) and its role: the admin API
// answers 403 to a member key.
async function detectRole() {
  await api("GET", "/v1/tasks?limit=1");
  try {
    await api("GET", "/v1/admin/stats");
    return "admin";
  } catch (e) {
    if (e.status === 403) return "member";
    throw e;
  }
}

async function signIn(ev) {
  ev.preventDefault();
  const input = $("signin-key");
  const key = input.value.trim().replace(/^Bearer\s+/i, ""); // pasted with its scheme
  const err = $("signin-error");
  err.hidden = true;
  if (!key) return;
  keepKey(key);
  input.value = "";
  try {
    session.role = await detectRole();
  } catch (e) {
    forgetKey();
    err.textContent = e.status === 401 ? "This key was refused: " + e.message + "." : "Could not sign in: " + e.describe();
    err.hidden = false;
    return;
  }
  signedIn();
  if (location.hash === home()) route();
  else location.hash = home(); // hashchange routes
}

function signedIn() {
  show($("nav"), true);
  show($("who"), true);
  $("who-role").textContent = session.role === "admin" ? "admin key" : "member key";
  for (const a of document.querySelectorAll(".admin-only")) show(a, session.role === "admin");
}

function signOut(message) {
  forgetKey();
  navigated();
  show($("nav"), false);
  show($("who"), false);
  for (const a of document.querySelectorAll(".admin-only")) show(a, false);
  flash(message || "");
  showView("signin");
}

function wire() {
  $("signin-form").addEventListener("submit", signIn);
  $("signout").addEventListener("click", () => signOut(""));
  window.addEventListener("hashchange", route);
  onRefused((err) => signOut("Your key was refused (" + err.message + "). Sign in again."));
  for (const v of views) v.wire();
  register(...views);
}

async function start() {
  wire();
  if (!storedKey()) {
    showView("signin");
    return;
  }
  try {
    session.role = await detectRole();
  } catch (e) {
    signOut(e.status === 401 ? "Your key was refused. Sign in again." : "Could not reach Docket: " + e.describe());
    return;
  }
  signedIn();
  route();
}

start();
