// Burn-down benchmark of the TypeScript worker: submits N no-op tasks of a
// fresh remote workflow (POST /v1/tasks/batch, 1,000 per call), then runs
// one Worker with S slots until the server has taken every outcome, and
// prints one JSON line {"tasks","seconds","tasks_per_second",…}.
//
//   node bench.mjs --url http://127.0.0.1:8080 --admin-key KEY -n 20000 --slots 64
//   node bench.mjs --fake -n 20000 --slots 64    # against testkit/fake_docket.mjs in its own process
//
// The admin key must be a key of the tenant the worker key is made for
// (--tenant, default demo). The server's pool capacity and the tenant's
// in-flight limit must admit N queued tasks.

import { spawn } from "node:child_process";
import { once } from "node:events";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { Worker } from "./dist/index.js";

function flags(argv) {
  const o = { url: process.env.DOCKET_URL, adminKey: process.env.DOCKET_ADMIN_KEY, n: 10_000, slots: 64, tenant: "demo", waitMs: 1000, fake: false };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const v = () => argv[++i];
    if (a === "--url") o.url = v();
    else if (a === "--admin-key") o.adminKey = v();
    else if (a === "-n" || a === "--n") o.n = Number(v());
    else if (a === "--slots") o.slots = Number(v());
    else if (a === "--tenant") o.tenant = v();
    else if (a === "--wait-ms") o.waitMs = Number(v());
    else if (a === "--fake") o.fake = true;
    else throw new Error(`bench: unknown flag ${a}`);
  }
  if (!Number.isInteger(o.n) || o.n < 1) throw new Error("bench: -n must be a positive integer");
  return o;
}

async function call(o, method, path, body) {
  const res = await fetch(o.url.replace(/\/+$/, "") + path, {
    method,
    headers: { authorization: `Bearer ${o.adminKey}`, "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`bench: ${method} ${path}: HTTP ${res.status} ${text.slice(0, 200)}`);
  return text ? JSON.parse(text) : null;
}

const o = flags(process.argv.slice(2));
let fake;
if (o.fake) {
  const script = fileURLToPath(new URL("./testkit/fake_docket.mjs", import.meta.url));
  fake = spawn(process.execPath, [script], { stdio: ["ignore", "pipe", "inherit"] });
  const [line] = await once(createInterface({ input: fake.stdout }), "line");
  const started = JSON.parse(line);
  o.url = started.url;
  o.adminKey = started.admin_key;
}
if (!o.url || !o.adminKey) throw new Error("bench: --url and --admin-key (or DOCKET_URL, DOCKET_ADMIN_KEY, or --fake) are required");

const run = Array.from({ length: 8 }, () => String.fromCharCode(97 + Math.floor(Math.random() * 26))).join("");
const workflow = `ts.bench.${run}`;
await call(o, "PUT", `/v1/admin/workflows/${workflow}`, { pool: "online" });
const { key } = await call(o, "POST", "/v1/admin/keys", { tenant: o.tenant, principal: "ts-bench", role: "worker" });

const submitStart = performance.now();
for (let i = 0; i < o.n; i += 1000) {
  const tasks = [];
  for (let j = i; j < Math.min(o.n, i + 1000); j++) tasks.push({ idempotency_key: `${run}-${j}`, workflow, input: { i: j } });
  const { results } = await call(o, "POST", "/v1/tasks/batch", { tasks });
  const refused = results.filter((r) => r.status !== 201);
  if (refused.length > 0) throw new Error(`bench: ${refused.length} submissions refused, e.g. ${JSON.stringify(refused[0])}`);
}
const submitSeconds = (performance.now() - submitStart) / 1000;

const worker = new Worker({ url: o.url, key, slots: o.slots, waitMs: o.waitMs });
worker.handle(workflow, () => null);
const t0 = performance.now();
const running = worker.run();
await new Promise((resolve, reject) => {
  running.catch(reject);
  const timer = setInterval(() => {
    const s = worker.stats();
    if (s.succeeded + s.failed + s.refused >= o.n) {
      clearInterval(timer);
      resolve();
    }
  }, 2);
});
const seconds = (performance.now() - t0) / 1000;
const stats = worker.stats();
await worker.stop();
await running;
await call(o, "DELETE", `/v1/admin/workflows/${workflow}`).catch(() => {});
fake?.kill("SIGTERM");

console.log(
  JSON.stringify({
    tasks: o.n,
    seconds: Number(seconds.toFixed(3)),
    tasks_per_second: Math.round(o.n / seconds),
    slots: o.slots,
    succeeded: stats.succeeded,
    refused: stats.refused,
    heartbeats: stats.heartbeats,
    submit_seconds: Number(submitSeconds.toFixed(3)),
    server: o.fake ? "fake" : o.url,
  }),
);
