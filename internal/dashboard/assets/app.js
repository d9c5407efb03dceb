// Docket's operator dashboard: a page over the v1 API, no framework.
//
// Rules this file keeps:
// - The API key lives in sessionStorage only and travels only in the
//   Authorization header of fetch calls: never in a URL, a cookie or a log
//   line of the browser.
// - Everything shown comes from the API and may carry client data: it is
//   put on the page with textContent and createElement, never as HTML.
// - Every call is one indexed, bounded API request (lists carry a limit).
"use strict";

(function () {
  const KEY_STORAGE = "docket.apiKey";
  const TERMINAL = new Set(["succeeded", "failed", "cancelled", "timed_out"]);
  const EXAMPLES = {
    "quality.evaluate": { text: "Thanks for your order. It ships tomorrow." },
    "demo.echo": { hello: "world" },
    "demo.sleep": { ms: 30000 },
    "demo.fail": { code: "demo_failure", retryable: false },
  };
  const OVERVIEW_EVERY_MS = 5000;
  const TASKS_EVERY_MS = 3000;
  const TASK_EVERY_MS = 2000;
  const ADMIN_EVERY_MS = 5000;
  const CHART_SAMPLES = 121; // 10 minutes of 5 s samples
  const WORKFLOW_SCAN_PAGES = 10; // a workflow filter reads at most this many pages of 100

  const app = {
    role: null, // "admin" or "member" once signed in
    timer: null, // the current view's refresh timer
    nav: 0, // counts navigations: a view's timer belongs to the navigation that opened it
    view: null,
    samples: [], // overview chart: {t, ok, bad}
    tasks: { after: "", stack: [], next: "" },
    taskId: null,
    inputEdited: false,
  };

  // ---- DOM helpers -------------------------------------------------------

  function $(id) {
    return document.getElementById(id);
  }

  // el makes an element; children are nodes or strings (as text).
  function el(tag, props, ...children) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(props || {})) {
      if (v === undefined || v === null) continue;
      if (k === "class") node.className = v;
      else if (k === "text") node.textContent = String(v);
      else if (k === "title") node.title = String(v);
      else if (k === "href") node.setAttribute("href", v);
      else if (k === "data") Object.assign(node.dataset, v);
      else if (k === "on") for (const [ev, fn] of Object.entries(v)) node.addEventListener(ev, fn);
      else node[k] = v;
    }
    for (const c of children) {
      if (c === undefined || c === null || c === false) continue;
      node.append(typeof c === "string" || typeof c === "number" ? document.createTextNode(String(c)) : c);
    }
    return node;
  }

  function show(node, on) {
    node.hidden = !on;
  }

  function say(node, text, kind) {
    node.textContent = text;
    node.className = "answer" + (kind ? " " + kind : "");
    node.hidden = !text;
  }

  function flash(text) {
    const f = $("flash");
    f.textContent = text || "";
    f.hidden = !text;
  }

  // taskHref is the dashboard's link to a task (the ID is percent-encoded,
  // so it cannot leave the fragment).
  function taskHref(id) {
    return "#/tasks/" + encodeURIComponent(id);
  }

  // ---- formatting --------------------------------------------------------

  function pad(n) {
    return String(n).padStart(2, "0");
  }

  function fmtTime(iso) {
    if (!iso) return "—";
    const d = new Date(iso);
    if (isNaN(d)) return String(iso);
    return d.getFullYear() + "-" + pad(d.getMonth() + 1) + "-" + pad(d.getDate()) + " " +
      pad(d.getHours()) + ":" + pad(d.getMinutes()) + ":" + pad(d.getSeconds());
  }

  function fmtDuration(ms) {
    if (ms < 0) ms = 0;
    const s = Math.round(ms / 1000);
    if (s < 60) return s + " s";
    if (s < 3600) return Math.floor(s / 60) + " min" + (s % 60 ? " " + (s % 60) + " s" : "");
    if (s < 86400) return Math.floor(s / 3600) + " h " + Math.floor((s % 3600) / 60) + " min";
    return Math.floor(s / 86400) + " d " + Math.floor((s % 86400) / 3600) + " h";
  }

  function ago(iso) {
    if (!iso) return "never";
    return fmtDuration(Date.now() - new Date(iso).getTime()) + " ago";
  }

  function fmtNumber(n) {
    return Number(n).toLocaleString("en-US");
  }

  function stateBadge(state) {
    return el("span", { class: "state state-" + String(state).replace(/[^a-z_]/g, ""), text: state });
  }

  function fmtValue(v) {
    if (v === null || v === undefined) return "—";
    if (typeof v === "string") return v;
    return JSON.stringify(v);
  }

  // ---- the API -----------------------------------------------------------

  class APIError extends Error {
    constructor(status, code, message, traceId) {
      super(message);
      this.status = status;
      this.code = code;
      this.traceId = traceId;
    }
    describe() {
      return this.code + ": " + this.message;
    }
  }

  // api calls the API with the session's key. A 401 signs out.
  async function api(method, path, body, headers) {
    const h = Object.assign({ Accept: "application/json" }, headers || {});
    const key = sessionStorage.getItem(KEY_STORAGE);
    if (key) h.Authorization = "Bearer " + key;
    const init = { method, headers: h, cache: "no-store", credentials: "omit", redirect: "error" };
    if (body !== undefined) {
      h["Content-Type"] = "application/json";
      init.body = typeof body === "string" ? body : JSON.stringify(body);
    }
    let resp;
    try {
      resp = await fetch(path, init);
    } catch (e) {
      throw new APIError(0, "network", "the server did not answer", "");
    }
    const text = await resp.text();
    let data = null;
    if (text) {
      try {
        data = JSON.parse(text);
      } catch (e) {
        data = null;
      }
    }
    if (!resp.ok) {
      const e = (data && data.error) || {};
      const err = new APIError(resp.status, e.code || "http_" + resp.status, e.message || resp.statusText, e.trace_id || "");
      if (resp.status === 401 && app.role) signOut("Your key was refused (" + err.message + "). Sign in again.");
      throw err;
    }
    return { status: resp.status, data, headers: resp.headers };
  }

  async function metricsText() {
    const resp = await fetch("/metrics", { cache: "no-store", credentials: "omit" });
    if (!resp.ok) throw new APIError(resp.status, "http_" + resp.status, "metrics unavailable", "");
    return resp.text();
  }

  // parseMetrics reads the Prometheus text format: [{name, labels, value}].
  function parseMetrics(text) {
    const out = [];
    const line = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)/;
    const label = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;
    for (const l of text.split("\n")) {
      if (!l || l[0] === "#") continue;
      const m = line.exec(l);
      if (!m) continue;
      const labels = {};
      for (const lm of (m[2] || "").matchAll(label)) {
        labels[lm[1]] = lm[2].replace(/\\(.)/g, (_, c) => (c === "n" ? "\n" : c));
      }
      out.push({ name: m[1], labels, value: Number(m[3]) });
    }
    return out;
  }

  function sumMetric(samples, name, match) {
    let total = 0;
    for (const s of samples) {
      if (s.name !== name) continue;
      if (match && !Object.entries(match).every(([k, v]) => (Array.isArray(v) ? v.includes(s.labels[k]) : s.labels[k] === v))) continue;
      total += s.value;
    }
    return total;
  }

  // ---- session -----------------------------------------------------------

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
    sessionStorage.setItem(KEY_STORAGE, key);
    input.value = "";
    try {
      app.role = await detectRole();
    } catch (e) {
      sessionStorage.removeItem(KEY_STORAGE);
      app.role = null;
      err.textContent = e.status === 401 ? "This key was refused: " + e.message + "." : "Could not sign in: " + e.describe();
      err.hidden = false;
      return;
    }
    signedIn();
    const home = app.role === "admin" ? "#/overview" : "#/tasks";
    if (location.hash === home) route();
    else location.hash = home; // hashchange routes
  }

  function signedIn() {
    show($("nav"), true);
    show($("who"), true);
    $("who-role").textContent = app.role === "admin" ? "admin key" : "member key";
    for (const a of document.querySelectorAll(".admin-only")) show(a, app.role === "admin");
  }

  function signOut(message) {
    sessionStorage.removeItem(KEY_STORAGE);
    app.role = null;
    navigated();
    show($("nav"), false);
    show($("who"), false);
    for (const a of document.querySelectorAll(".admin-only")) show(a, false);
    flash(message || "");
    showView("signin");
  }

  // ---- views and routing -------------------------------------------------

  // calls numbers the calls of one loader. Loads overlap (a timer, a click,
  // a form's reload), and an older answer that arrives last would replace
  // the newer one on screen: a call renders (or flashes its error) only
  // while it is the latest.
  function calls() {
    let n = 0;
    return () => {
      const mine = ++n;
      return () => mine === n;
    };
  }
  const loads = { tasks: calls(), tenants: calls(), keys: calls(), schedulers: calls(), rules: calls() };

  function stopTimer() {
    if (app.timer) clearInterval(app.timer);
    app.timer = null;
  }

  // navigated ends the current view's refresh: a new view (or sign-out)
  // takes over.
  function navigated() {
    app.nav++;
    stopTimer();
  }

  // every installs the refresh timer of the view that navigation nav
  // opened, unless the user has moved on since: a view whose first load
  // answered after a click elsewhere must not replace the timer of the
  // view on screen (which would then never refresh again).
  function every(nav, ms, fn) {
    if (nav !== app.nav) return;
    stopTimer();
    app.timer = setInterval(() => {
      if (!document.hidden) fn();
    }, ms);
  }

  function showView(name) {
    app.view = name;
    for (const v of document.querySelectorAll(".view")) show(v, v.id === "view-" + name);
    for (const a of document.querySelectorAll("#nav a")) {
      a.classList.toggle("active", a.id === "nav-" + (name === "task" ? "tasks" : name));
    }
  }

  function route() {
    navigated();
    if (!app.role) {
      showView("signin");
      return;
    }
    const hash = location.hash || "";
    const m = /^#\/tasks\/(.+)$/.exec(hash);
    if (m) {
      openTask(decodeURIComponent(m[1]));
      return;
    }
    switch (hash) {
      case "#/overview":
        return app.role === "admin" ? openOverview() : showView("forbidden");
      case "#/admin":
        return app.role === "admin" ? openAdmin() : showView("forbidden");
      case "#/tasks":
        return openTasks();
      default:
        location.replace(app.role === "admin" ? "#/overview" : "#/tasks");
    }
  }

  // ---- overview ----------------------------------------------------------

  async function openOverview() {
    const nav = app.nav;
    showView("overview");
    await refreshOverview();
    every(nav, OVERVIEW_EVERY_MS, refreshOverview);
  }

  async function refreshOverview() {
    let stats, metrics;
    try {
      const [s, text] = await Promise.all([api("GET", "/v1/admin/stats"), metricsText()]);
      stats = s.data;
      metrics = parseMetrics(text);
    } catch (e) {
      if (e instanceof APIError) flash("Overview: " + e.describe());
      return;
    }
    if (app.view !== "overview") return;
    flash("");
    const now = Date.now();
    const last = app.samples[app.samples.length - 1];
    if (last && now - last.t < OVERVIEW_EVERY_MS / 2) app.samples.pop(); // a refresh soon after another
    app.samples.push({
      t: now,
      ok: sumMetric(metrics, "docket_task_terminal_total", { state: "succeeded" }),
      bad: sumMetric(metrics, "docket_task_terminal_total", { state: ["failed", "timed_out"] }),
    });
    if (app.samples.length > CHART_SAMPLES) app.samples.splice(0, app.samples.length - CHART_SAMPLES);
    renderPools(stats, metrics);
    renderChart();
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
      const terminal = ["succeeded", "failed", "cancelled", "timed_out"].map((st) =>
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

  // renderChart draws the finish rates between samples as an SVG line chart.
  function renderChart() {
    const box = $("chart");
    const W = 600, H = 170, L = 44, R = 8, T = 10, B = 24;
    const ns = "http://www.w3.org/2000/svg";
    const svg = document.createElementNS(ns, "svg");
    svg.setAttribute("viewBox", "0 0 " + W + " " + H);
    svg.setAttribute("role", "img");
    svg.setAttribute("aria-label", "tasks finished per second");
    const mk = (tag, attrs, text) => {
      const n = document.createElementNS(ns, tag);
      for (const [k, v] of Object.entries(attrs)) n.setAttribute(k, String(v));
      if (text !== undefined) n.textContent = text;
      svg.append(n);
      return n;
    };
    const s = app.samples;
    const rates = [];
    for (let i = 1; i < s.length; i++) {
      const dt = (s[i].t - s[i - 1].t) / 1000;
      if (dt <= 0) continue;
      rates.push({ t: s[i].t, ok: Math.max(0, s[i].ok - s[i - 1].ok) / dt, bad: Math.max(0, s[i].bad - s[i - 1].bad) / dt });
    }
    // The x axis spans the samples taken: at least a minute, at most ten.
    const end = s.length ? s[s.length - 1].t : Date.now();
    const span = Math.min((CHART_SAMPLES - 1) * OVERVIEW_EVERY_MS, Math.max(60000, s.length ? end - s[0].t : 0));
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
      mk("text", { x: (W + L) / 2, y: H / 2, "text-anchor": "middle", class: "axis" }, "collecting samples…");
    }
    for (const [field, cls] of [["ok", "line-ok"], ["bad", "line-bad"]]) {
      if (rates.length === 0) continue;
      const pts = rates.map((r) => x(r.t).toFixed(1) + "," + y(r[field]).toFixed(1)).join(" ");
      mk("polyline", { points: pts, class: cls, fill: "none" });
      if (rates.length <= 40) {
        for (const r of rates) mk("circle", { cx: x(r.t).toFixed(1), cy: y(r[field]).toFixed(1), r: 2.5, class: cls + " dot" });
      }
    }
    box.dataset.samples = String(s.length);
    box.replaceChildren(svg);
  }

  function niceMax(v) {
    const mag = Math.pow(10, Math.floor(Math.log10(v)));
    for (const m of [1, 2, 5, 10]) if (m * mag >= v) return m * mag;
    return 10 * mag;
  }

  function formatRate(v) {
    return (v >= 10 ? v.toFixed(0) : v.toFixed(1)) + "/s";
  }

  function renderRejections(metrics) {
    const rows = metrics.filter((m) => m.name === "docket_admission_rejections_total" && m.value > 0);
    rows.sort((a, b) => b.value - a.value);
    const body = $("rejections").tBodies[0];
    body.replaceChildren(...rows.map((r) =>
      el("tr", {}, el("td", {}, el("code", { text: r.labels.code || "?" })), el("td", { class: "num", text: fmtNumber(r.value) }))));
    show($("rejections-empty"), rows.length === 0);
  }

  function renderTenantUse(tenants) {
    const body = $("overview-tenants").tBodies[0];
    body.replaceChildren(...tenants.map((t) => el("tr", {},
      el("td", { text: t.id }),
      el("td", { class: "num", text: fmtNumber(t.in_flight) }),
      el("td", { class: "num", text: t.max_in_flight > 0 ? fmtNumber(t.max_in_flight) : "unlimited" }),
      el("td", { class: "use" }, meter(t.in_flight, t.max_in_flight)),
      el("td", { class: "num", text: t.weight }))));
  }

  // ---- tasks -------------------------------------------------------------

  async function openTasks() {
    const nav = app.nav;
    showView("tasks");
    await loadTasks();
    every(nav, TASKS_EVERY_MS, () => {
      if ($("auto-refresh").checked) loadTasks();
    });
  }

  function taskQuery(after, limit) {
    const q = new URLSearchParams();
    const state = $("filter-state").value;
    const pool = $("filter-pool").value;
    if (state) q.set("state", state);
    if (pool) q.set("pool", pool);
    q.set("limit", String(limit));
    if (after) q.set("after", after);
    return "/v1/tasks?" + q.toString();
  }

  // loadTasks reads the current page. The API filters by state and pool;
  // a workflow filter is applied here, over at most WORKFLOW_SCAN_PAGES
  // pages of 100. Only the latest call renders: an auto-refresh of page 1
  // answered after a click to page 2 would otherwise put page 1's rows
  // under the label "page 2".
  async function loadTasks() {
    const latest = loads.tasks();
    const limit = Number($("filter-limit").value) || 50;
    const workflow = $("filter-workflow").value.trim();
    let tasks = [];
    let next = "";
    let scanned = 0;
    try {
      if (!workflow) {
        const r = await api("GET", taskQuery(app.tasks.after, limit));
        tasks = r.data.tasks;
        next = r.data.next || "";
        scanned = tasks.length;
      } else {
        let after = app.tasks.after;
        for (let i = 0; i < WORKFLOW_SCAN_PAGES; i++) {
          const r = await api("GET", taskQuery(after, 100));
          scanned += r.data.tasks.length;
          tasks.push(...r.data.tasks.filter((t) => t.workflow === workflow));
          next = r.data.next || "";
          after = next;
          if (!next || tasks.length >= limit) break;
        }
      }
    } catch (e) {
      if (e instanceof APIError && latest()) flash("Tasks: " + e.describe());
      return;
    }
    if (app.view !== "tasks" || !latest()) return;
    flash("");
    app.tasks.next = next;
    renderTasks(tasks);
    const note = $("tasks-note");
    note.textContent = workflow
      ? "Workflow filter applied in the browser: " + tasks.length + " of " + scanned + " tasks read match."
      : "";
    show(note, !!workflow);
    $("page-label").textContent = "page " + (app.tasks.stack.length + 1);
    $("page-prev").disabled = app.tasks.stack.length === 0;
    $("page-first").disabled = app.tasks.stack.length === 0;
    $("page-next").disabled = !next;
  }

  function renderTasks(tasks) {
    const body = $("tasks-table").tBodies[0];
    body.replaceChildren(...tasks.map((t) => {
      const row = el("tr", { data: { id: t.id, state: t.state } },
        el("td", { class: "mono" }, el("a", { href: taskHref(t.id), title: t.id, text: t.id.slice(0, 8) + "…" + t.id.slice(-4) })),
        el("td", { text: t.workflow }),
        el("td", { text: t.pool }),
        el("td", {}, stateBadge(t.state)),
        el("td", { class: "num", text: t.attempt + "/" + t.max_attempts }),
        el("td", { text: fmtTime(t.created_at) }),
        el("td", { text: fmtTime(t.finished_at) }),
        el("td", {}, t.error ? el("code", { text: t.error.code }) : ""));
      row.addEventListener("click", (ev) => {
        if (ev.target.closest("a")) return;
        location.hash = taskHref(t.id);
      });
      return row;
    }));
    show($("tasks-empty"), tasks.length === 0);
  }

  function resetPaging() {
    app.tasks.after = "";
    app.tasks.stack = [];
  }

  function randomKey() {
    const b = new Uint8Array(12);
    crypto.getRandomValues(b);
    return "ui-" + Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");
  }

  function fillExample() {
    if (app.inputEdited) return;
    const ex = EXAMPLES[$("new-workflow").value.trim()];
    $("new-input").value = ex ? JSON.stringify(ex, null, 2) : "";
  }

  async function submitTask(ev) {
    ev.preventDefault();
    const answer = $("new-answer");
    let input;
    const raw = $("new-input").value.trim();
    try {
      input = raw === "" ? null : JSON.parse(raw);
    } catch (e) {
      say(answer, "The input is not JSON: " + e.message, "bad");
      return;
    }
    const body = { workflow: $("new-workflow").value.trim(), input };
    if ($("new-pool").value) body.pool = $("new-pool").value;
    const prio = Number($("new-priority").value);
    if (prio) body.priority = prio;
    const idem = $("new-idem").value.trim() || randomKey();
    try {
      const r = await api("POST", "/v1/tasks", body, { "Idempotency-Key": idem });
      const t = r.data;
      answer.replaceChildren(
        (r.status === 201 ? "Created " : "Replayed (same key, same request): "),
        el("a", { href: taskHref(t.id), text: t.id }), " (idempotency key " + idem + ")");
      answer.className = "answer good";
      answer.hidden = false;
      $("new-idem").value = "";
      resetPaging();
      loadTasks();
    } catch (e) {
      say(answer, "Refused — " + e.describe(), "bad");
    }
  }

  // ---- one task ----------------------------------------------------------

  async function openTask(id) {
    const nav = app.nav;
    showView("task");
    if (app.taskId !== id) {
      app.taskId = id;
      say($("task-cancel-answer"), "");
      $("task-id").textContent = id;
      $("task-state").replaceChildren();
      for (const n of ["task-fields", "task-outcome", "task-timeline"]) $(n).replaceChildren();
      $("task-evidence").tHead.replaceChildren();
      $("task-evidence").tBodies[0].replaceChildren();
    }
    const terminal = await loadTask(id);
    if (!terminal) {
      every(nav, TASK_EVERY_MS, async () => {
        if ((await loadTask(id)) && nav === app.nav) stopTimer();
      });
    }
  }

  // loadTask reads a task, its events and evidence and shows them; it
  // reports whether the task is terminal (nothing more will change).
  async function loadTask(id) {
    const path = "/v1/tasks/" + encodeURIComponent(id);
    let task, events, evidence;
    try {
      const [t, ev, evd] = await Promise.all([api("GET", path), api("GET", path + "/events"), api("GET", path + "/evidence")]);
      task = t.data;
      events = ev.data.events;
      evidence = evd.data.evidence;
    } catch (e) {
      if (app.view !== "task" || app.taskId !== id) return true;
      if (e.status === 404) {
        const missing = $("task-missing");
        missing.textContent = "No task " + id + " for this key's tenant.";
        show(missing, true);
        show($("task-body"), false);
        show($("task-cancel"), false);
        return true;
      }
      if (e instanceof APIError) flash("Task: " + e.describe());
      return false;
    }
    if (app.view !== "task" || app.taskId !== id) return true;
    flash("");
    show($("task-missing"), false);
    show($("task-body"), true);
    renderTask(task);
    renderTimeline(events);
    renderEvidence(evidence);
    return TERMINAL.has(task.state);
  }

  function renderTask(t) {
    $("task-state").replaceChildren(stateBadge(t.state));
    $("task-state").dataset.state = t.state;
    const cancel = $("task-cancel");
    show(cancel, !TERMINAL.has(t.state));
    cancel.disabled = false;
    const fields = [
      ["tenant", t.tenant], ["author", t.author], ["workflow", t.workflow], ["pool", t.pool],
      ["attempt", t.attempt + " of " + t.max_attempts], ["priority", t.priority],
      ["created", fmtTime(t.created_at)], ["run at", t.run_at ? fmtTime(t.run_at) : "at once"],
      ["started", fmtTime(t.started_at)], ["finished", fmtTime(t.finished_at)], ["deadline", fmtTime(t.deadline_at)],
      ["trace ID", t.trace_id], ["rule set", t.config_version || "—"],
    ];
    $("task-fields").replaceChildren(...fields.flatMap(([k, v]) => [el("dt", { text: k }), el("dd", { text: fmtValue(v) })]));
    const out = $("task-outcome");
    if (t.error) {
      out.replaceChildren(
        el("p", {}, el("span", { class: "label", text: "error " }), el("code", { class: "bad", id: "task-error-code", text: t.error.code })),
        el("p", { id: "task-error-message", text: t.error.message || "(no message)" }));
    } else if (t.result !== null && t.result !== undefined) {
      out.replaceChildren(el("p", { class: "label", text: "result" }),
        el("pre", { id: "task-result", class: "json", text: JSON.stringify(t.result, null, 2) }));
    } else {
      out.replaceChildren(el("p", { class: "muted", text: TERMINAL.has(t.state) ? "No result." : "Not finished yet." }));
    }
  }

  function renderTimeline(events) {
    $("task-timeline").replaceChildren(...events.map((e) => el("li", { data: { to: e.to } },
      el("time", { text: fmtTime(e.at), title: e.at }),
      el("span", { class: "move" }, e.from ? stateBadge(e.from) : el("span", { class: "muted", text: "admitted" }), " → ", stateBadge(e.to)),
      el("span", { class: "muted small", text: "epoch " + e.epoch }),
      e.code ? el("code", { text: e.code }) : null)));
  }

  // renderEvidence shows evidence items as a table: one column per member
  // of the items' bodies (at most eight), else the body as JSON.
  function renderEvidence(items) {
    const table = $("task-evidence");
    const cols = [];
    for (const it of items) {
      if (it.body && typeof it.body === "object" && !Array.isArray(it.body)) {
        for (const k of Object.keys(it.body)) if (!cols.includes(k) && cols.length < 8) cols.push(k);
      }
    }
    const useBody = cols.length === 0;
    table.tHead.replaceChildren(el("tr", {}, el("th", { text: "#" }), el("th", { text: "attempt" }), el("th", { text: "kind" }),
      ...(useBody ? [el("th", { text: "body" })] : cols.map((c) => el("th", { text: c.replace(/_/g, " ") })))));
    table.tBodies[0].replaceChildren(...items.map((it, i) => el("tr", {},
      el("td", { class: "num", text: i + 1 }),
      el("td", { class: "num", text: it.attempt }),
      el("td", {}, el("code", { text: it.kind })),
      ...(useBody ? [el("td", { class: "mono", text: JSON.stringify(it.body) })] : cols.map((c) => evidenceCell(it.body && it.body[c]))))));
    show(table, items.length > 0);
    show($("evidence-empty"), items.length === 0);
  }

  function evidenceCell(v) {
    if (v === true) return el("td", { class: "pass", text: "✓ yes" });
    if (v === false) return el("td", { class: "fail", text: "✗ no" });
    return el("td", { text: fmtValue(v) });
  }

  async function cancelTask() {
    const id = app.taskId;
    const btn = $("task-cancel");
    const answer = $("task-cancel-answer");
    btn.disabled = true;
    try {
      const r = await api("POST", "/v1/tasks/" + encodeURIComponent(id) + "/cancel");
      const t = r.data;
      if (t.state === "cancelled" && (!t.error || t.error.code === "cancelled")) {
        say(answer, "Cancelled: the task is now cancelled.", "good");
      } else {
        say(answer, "The task had already finished (" + t.state + "); cancelling changed nothing.", "");
      }
    } catch (e) {
      say(answer, "Cancel refused — " + e.describe(), "bad");
      btn.disabled = false;
      return;
    }
    await loadTask(id);
  }

  // ---- admin -------------------------------------------------------------

  async function openAdmin() {
    const nav = app.nav;
    showView("admin");
    await refreshAdmin();
    every(nav, ADMIN_EVERY_MS, refreshSchedulers);
  }

  async function refreshAdmin() {
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
    return el("tr", { data: { tenant: t.id } },
      el("td", { text: t.id }), el("td", { class: "num", text: fmtNumber(t.in_flight) }),
      el("td", {}, max), el("td", {}, weight), el("td", {}, save, " ", answer));
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
      el("td", { text: k.role }), el("td", { text: fmtTime(k.created_at) }),
      el("td", { text: k.revoked_at ? fmtTime(k.revoked_at) : "—" }), el("td", {}, action));
  }

  async function createKey(ev) {
    ev.preventDefault();
    const answer = $("key-answer");
    say(answer, "");
    const body = { tenant: $("key-tenant").value.trim(), principal: $("key-principal").value.trim(), role: $("key-role").value };
    try {
      const r = await api("POST", "/v1/admin/keys", body);
      $("new-key-owner").textContent = r.data.principal + " (" + r.data.role + ") of tenant " + r.data.tenant;
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
    if (app.view !== "admin" || !latest()) return;
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

  // ---- start -------------------------------------------------------------

  function wire() {
    $("signin-form").addEventListener("submit", signIn);
    $("signout").addEventListener("click", () => signOut(""));
    window.addEventListener("hashchange", route);

    $("new-task-toggle").addEventListener("click", () => {
      const f = $("new-task");
      f.hidden = !f.hidden;
      if (!f.hidden) fillExample();
    });
    $("new-workflow").addEventListener("change", fillExample);
    $("new-input").addEventListener("input", () => {
      app.inputEdited = $("new-input").value.trim() !== "";
    });
    $("new-task").addEventListener("submit", submitTask);
    $("task-filters").addEventListener("submit", (ev) => {
      ev.preventDefault();
      resetPaging();
      loadTasks();
    });
    for (const id of ["filter-state", "filter-pool", "filter-limit"]) {
      $(id).addEventListener("change", () => {
        resetPaging();
        loadTasks();
      });
    }
    $("page-next").addEventListener("click", () => {
      if (!app.tasks.next) return;
      app.tasks.stack.push(app.tasks.after);
      app.tasks.after = app.tasks.next;
      loadTasks();
    });
    $("page-prev").addEventListener("click", () => {
      app.tasks.after = app.tasks.stack.pop() || "";
      loadTasks();
    });
    $("page-first").addEventListener("click", () => {
      resetPaging();
      loadTasks();
    });

    $("task-cancel").addEventListener("click", cancelTask);

    $("admin-refresh").addEventListener("click", refreshAdmin);
    $("tenant-form").addEventListener("submit", setTenantLimits);
    $("key-form").addEventListener("submit", createKey);
    $("keys-filter").addEventListener("submit", (ev) => {
      ev.preventDefault();
      loadKeys();
    });
    $("new-key-done").addEventListener("click", forgetNewKey);
    $("new-key-copy").addEventListener("click", copyNewKey);
  }

  async function start() {
    wire();
    if (!sessionStorage.getItem(KEY_STORAGE)) {
      showView("signin");
      return;
    }
    try {
      app.role = await detectRole();
    } catch (e) {
      signOut(e.status === 401 ? "Your key was refused. Sign in again." : "Could not reach Docket: " + e.describe());
      return;
    }
    signedIn();
    route();
  }

  start();
})();
