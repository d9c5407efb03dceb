// The router: one view per route of the fragment (#/tasks/ID), each a
// module that declares its path and opens itself. A route part that does
// not decode (a stray %) or a path no view has shows the not-found view.

import { $, show } from "./dom.js";
import { navigated } from "./refresh.js";
import { isAdmin, session } from "./session.js";

const views = []; // {name, path: ["tasks", ":id"], admin, menu, open(params)}
let onScreen = null;

// register adds views to the routes.
export function register(...vs) {
  views.push(...vs);
}

// taskHref is the dashboard's link to a task (the ID is percent-encoded,
// so it cannot leave the fragment).
export function taskHref(id) {
  return "#/tasks/" + encodeURIComponent(id);
}

// showing reports whether the named view is on screen: an answer for a
// view the user has left is not rendered.
export function showing(name) {
  return onScreen === name;
}

// showView puts the named section on screen and marks its menu entry.
export function showView(name, menu) {
  onScreen = name;
  for (const v of document.querySelectorAll(".view")) show(v, v.id === "view-" + name);
  for (const a of document.querySelectorAll("#nav a")) a.classList.toggle("active", a.id === "nav-" + (menu || name));
}

// decodePart decodes one part of the fragment's path, or returns null when
// it is not valid percent-encoding.
function decodePart(part) {
  try {
    return decodeURIComponent(part);
  } catch (e) {
    return null;
  }
}

// match returns the parameters of a view's path for the parts, or null.
function match(path, parts) {
  if (path.length !== parts.length) return null;
  const params = {};
  for (let i = 0; i < path.length; i++) {
    if (path[i].startsWith(":")) params[path[i].slice(1)] = parts[i];
    else if (path[i] !== parts[i]) return null;
  }
  return params;
}

export function home() {
  return isAdmin() ? "#/overview" : "#/tasks";
}

function notFound(hash) {
  $("notfound-path").textContent = hash;
  showView("notfound", "");
}

// route opens the view of location.hash.
export function route() {
  navigated();
  if (!session.role) {
    showView("signin");
    return;
  }
  const hash = location.hash || "";
  if (hash === "" || hash === "#" || hash === "#/") {
    location.replace(home());
    return;
  }
  if (!hash.startsWith("#/")) {
    notFound(hash);
    return;
  }
  const parts = hash.slice(2).split("/").map(decodePart);
  if (parts.includes(null) || parts.includes("")) {
    notFound(hash);
    return;
  }
  for (const v of views) {
    const params = match(v.path, parts);
    if (!params) continue;
    if (v.admin && !isAdmin()) {
      showView("forbidden", "");
      return;
    }
    showView(v.name, v.menu);
    v.open(params);
    return;
  }
  notFound(hash);
}
