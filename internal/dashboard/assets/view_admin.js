// Admin (admin key): tenants and their limits, API keys (member, admin and
// worker keys), the schedulers' health, the published rule set versions.

import { api, APIError } from "./api.js";
import { $, el, flash, say, show } from "./dom.js";
import { fmtDuration, fmtNumber, fmtTime, pausedBadge } from "./format.js";
import { every, latestOnly, navigation } from "./refresh.js";
import { showing } from "./router.js";

const EVERY_MS = 5000;

const loads = { tenants: latestOnly(), keys: latestOnly(), schedulers: latestOnly(), rules: latestOnly() };

export const admin = {
  name: "admin",
  path: ["admin"],
  admin: true,
  wire,
  async open() {
    const nav = navigation();
    await refreshAll();
    every(nav, EVERY_MS, refreshSchedulers);
  },
};

function wire() {
  $("admin-refresh").addEventListener("click", refreshAll);
  $("tenant-form").addEventListener("submit", setTenantLimits);
  $("flow-form").addEventListener("submit", (ev) => ev.preventDefault());
  $("flow-pause").addEventListener("click", () => setPaused(true));
  $("flow-resume").addEventListener("click", () => setPaused(false));
  $("key-form").addEventListener("submit", createKey);
  $("key-role").addEventListener("change", roleChanged);
  roleChanged();
  $("keys-filter").addEventListener("submit", (ev) => {
    ev.preventDefault();
    loadKeys();
  });
  $("new-key-done").addEventListener("click", forgetNewKey);
  $("new-key-copy").addEventListener("click", copyNewKey);
}

async function refreshAll() {
  await Promise.all([loadTenants(), loadKeys(), refreshSchedulers(), loadRules()]);
}

async function loadTenants() {
  const latest = loads.tenants();
  let tenants;
  try {
    tenants = (await api("GET", "/v1/admin/tenants")).data.tenants;
  } catch (e) {
    if (e instanceof APIError && latest()) flash("Tenants: " + e.describe());
    return;
  }
  if (!latest()) return;
  $("admin-tenants").tBodies[0].replaceChildren(...tenants.map(tenantRow));
}

function tenantRow(t) {
  const max = el("input", { type: "number", min: "0", value: String(t.max_in_flight), className: "small-input" });
  const weight = el("input", { type: "number", min: "1", value: String(t.weight), className: "small-input" });
  const answer = el("span", { class: "answer", hidden: true });
  const save = el("button", { type: "button", text: "Save" });
  save.addEventListener("click", async () => {
    const patch = {};
    if (Number(max.value) !== t.max_in_flight) patch.max_in_flight = Number(max.value);
    if (Number(weight.value) !== t.weight) patch.weight = Number(weight.value);
    if (Object.keys(patch).length === 0) {
      say(answer, "Nothing changed.", "");
      return;
    }
    try {
      const r = await api("PATCH", "/v1/admin/tenants/" + encodeURIComponent(t.id), patch);
      t.max_in_flight = r.data.max_in_flight;
      t.weight = r.data.weight;
      say(answer, "Saved.", "good");
    } catch (e) {
      say(answer, e.describe(), "bad");
    }
  });
  // Pause or resume the tenant: nothing of it starts while paused (its
  // submissions are still queued; the flow form pauses refusing them).
  const toggle = el("button", { type: "button", className: "small", text: t.paused ? "Resume" : "Pause" });
  toggle.addEventListener("click", async () => {
    toggle.disabled = true;
    try {
      await api("POST", t.paused ? "/v1/admin/resume" : "/v1/admin/pause", { tenant: t.id });
      loadTenants();
    } catch (e) {
      toggle.disabled = false;
      say(answer, e.describe(), "bad");
    }
  });
  const name = el("td", { text: t.id });
  if (t.paused) name.append(" ", pausedBadge(t.refuse_submissions === true));
  if (t.rate_per_second) name.append(" ", el("span", { class: "muted", text: t.rate_per_second + "/s" }));
  return el("tr", { data: { tenant: t.id }, class: t.paused ? "paused" : "" },
    name, el("td", { class: "num", text: fmtNumber(t.in_flight) }),
    el("td", {}, max), el("td", {}, weight), el("td", {}, save, " ", toggle, " ", answer));
}

// setPaused pauses or resumes the pool, tenant or workflow of the flow form
// and shows everything paused. A pause refuses the target's submissions
// too when the form's box is ticked (a resume ends either kind); the box
// is cleared once such a pause is done, so the next pause is a plain one
// unless ticked again.
async function setPaused(paused) {
  const answer = $("flow-answer");
  const name = $("flow-name").value.trim();
  if (!name) {
    say(answer, "Name a pool, tenant or workflow.", "bad");
    return;
  }
  const body = { [$("flow-scope").value]: name };
  const refuse = paused && $("flow-refuse").checked;
  if (refuse) body.refuse_submissions = true;
  try {
    const r = await api("POST", paused ? "/v1/admin/pause" : "/v1/admin/resume", body);
    say(answer, pausedText(r.data.paused), "good");
    if (refuse) $("flow-refuse").checked = false;
    loadTenants();
  } catch (e) {
    say(answer, e.describe(), "bad");
  }
}

// pausedText lists the paused targets, each as "scope name", with those
// whose pause refuses submissions said so.
function pausedText(list) {
  if (list.length === 0) return "Nothing is paused.";
  return "Paused: " + list.map((p) => {
    const [scope, key] = Object.entries(p).find(([k]) => k !== "refuse_submissions") || ["?", ""];
    return scope + " " + key + (p.refuse_submissions === true ? " (refusing submissions)" : "");
  }).join(", ") + ".";
}

async function setTenantLimits(ev) {
  ev.preventDefault();
  const answer = $("tenant-answer");
  const id = $("tenant-id").value.trim();
  const patch = {};
  if ($("tenant-max").value !== "") patch.max_in_flight = Number($("tenant-max").value);
  if ($("tenant-weight").value !== "") patch.weight = Number($("tenant-weight").value);
  try {
    const r = await api("PATCH", "/v1/admin/tenants/" + encodeURIComponent(id), patch);
    say(answer, "Tenant " + r.data.id + ": max in flight " + r.data.max_in_flight + ", weight " + r.data.weight + ".", "good");
    loadTenants();
  } catch (e) {
    say(answer, e.describe(), "bad");
  }
}

async function loadKeys() {
  const latest = loads.keys();
  const tenant = $("keys-tenant").value.trim();
  let keys;
  try {
    keys = (await api("GET", "/v1/admin/keys" + (tenant ? "?tenant=" + encodeURIComponent(tenant) : ""))).data.keys;
  } catch (e) {
    if (e instanceof APIError && latest()) flash("Keys: " + e.describe());
    return;
  }
  if (!latest()) return;
  $("admin-keys").tBodies[0].replaceChildren(...keys.map(keyRow));
}

// roleOf is a key's role as shown: a worker key for every tenant says so.
function roleOf(k) {
  return k.role + (k.all_tenants ? ", all tenants" : "");
}

function keyRow(k) {
  let action = null;
  if (!k.revoked_at) {
    action = el("button", { type: "button", className: "danger small", text: "Revoke" });
    action.addEventListener("click", async () => {
      action.disabled = true;
      try {
        await api("POST", "/v1/admin/keys/" + encodeURIComponent(k.id) + "/revoke");
        loadKeys();
      } catch (e) {
        action.disabled = false;
        flash("Revoke: " + e.describe());
      }
    });
  }
  return el("tr", { data: { key: k.id }, class: k.revoked_at ? "revoked" : "" },
    el("td", { class: "mono", text: k.id }), el("td", { text: k.tenant }), el("td", { text: k.principal }),
    el("td", { text: roleOf(k) }), el("td", { text: fmtTime(k.created_at) }),
    el("td", { text: k.revoked_at ? fmtTime(k.revoked_at) : "—" }), el("td", {}, action));
}

// roleChanged offers "all tenants" to worker keys only.
function roleChanged() {
  const worker = $("key-role").value === "worker";
  const all = $("key-all-tenants");
  all.disabled = !worker;
  if (!worker) all.checked = false;
}

async function createKey(ev) {
  ev.preventDefault();
  const answer = $("key-answer");
  say(answer, "");
  const body = { tenant: $("key-tenant").value.trim(), principal: $("key-principal").value.trim(), role: $("key-role").value };
  if (body.role === "worker" && $("key-all-tenants").checked) body.all_tenants = true;
  try {
    const r = await api("POST", "/v1/admin/keys", body);
    $("new-key-owner").textContent = r.data.principal + " (" + roleOf(r.data) + ") of tenant " + r.data.tenant;
    $("new-key-value").textContent = r.data.key;
    show($("new-key"), true);
    $("key-principal").value = "";
    loadKeys();
    loadTenants();
  } catch (e) {
    say(answer, e.describe(), "bad");
  }
}

function forgetNewKey() {
  $("new-key-value").textContent = "";
  show($("new-key"), false);
}

async function copyNewKey() {
  const key = $("new-key-value").textContent;
  try {
    await navigator.clipboard.writeText(key);
    $("new-key-copy").textContent = "Copied";
  } catch (e) {
    const range = document.createRange();
    range.selectNodeContents($("new-key-value"));
    const sel = window.getSelection();
    sel.removeAllRanges();
    sel.addRange(range);
  }
}

async function refreshSchedulers() {
  const latest = loads.schedulers();
  let stats;
  try {
    stats = (await api("GET", "/v1/admin/stats")).data;
  } catch (e) {
    if (e instanceof APIError && latest()) flash("Schedulers: " + e.describe());
    return;
  }
  if (!showing("admin") || !latest()) return;
  $("admin-schedulers").tBodies[0].replaceChildren(...stats.schedulers.map((s) => {
    const lagMs = s.last_success_at ? Date.now() - new Date(s.last_success_at).getTime() : null;
    return el("tr", { data: { scheduler: s.name } },
      el("td", { text: s.name }),
      el("td", { text: s.last_run_at ? fmtTime(s.last_run_at) : "not yet" }),
      el("td", { class: "num" + (lagMs === null || lagMs > 60000 ? " warn" : ""), text: lagMs === null ? "—" : fmtDuration(lagMs) }),
      el("td", { class: "num", text: fmtNumber(s.runs) }),
      el("td", { class: "num" + (s.failures > 0 ? " warn" : ""), text: fmtNumber(s.failures) }));
  }));
}

async function loadRules() {
  const latest = loads.rules();
  let sets;
  try {
    sets = (await api("GET", "/v1/admin/rules")).data.rule_sets;
  } catch (e) {
    if (e instanceof APIError && latest()) flash("Rules: " + e.describe());
    return;
  }
  if (!latest()) return;
  $("admin-rules").tBodies[0].replaceChildren(...sets.slice().reverse().map((r) => el("tr", {},
    el("td", { text: r.version }), el("td", { text: fmtTime(r.published_at) }), el("td", { class: "mono small", text: r.hash }))));
  show($("admin-rules"), sets.length > 0);
  show($("rules-empty"), sets.length === 0);
}
