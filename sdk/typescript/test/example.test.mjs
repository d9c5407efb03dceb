import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { once } from "node:events";
import { fileURLToPath } from "node:url";
import test from "node:test";
import { setup } from "../testkit/harness.mjs";

const example = fileURLToPath(new URL("../examples/worker.mjs", import.meta.url));

test("the README example runs a task, and SIGTERM stops it cleanly", { timeout: 15_000 }, async (t) => {
  const h = await setup({ workflows: ["ts.example.greet"] });
  t.after(() => h.close());
  const child = spawn(process.execPath, [example], {
    env: { ...process.env, DOCKET_URL: h.fake.url, DOCKET_WORKER_KEY: h.workerKey },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stderr = "";
  child.stderr.on("data", (d) => (stderr += d));
  t.after(() => child.kill("SIGKILL"));
  const ok = await h.client.submit("ts.example.greet", { name: "Ada" });
  const bad = await h.client.submit("ts.example.greet", { nom: "Ada" });
  const done = await h.client.get(ok.task.id, { waitMs: 10_000 });
  assert.equal(done.state, "succeeded", stderr);
  assert.deepEqual(done.result, { greeting: "hello, Ada" });
  assert.equal((await h.client.evidence(ok.task.id))[0].kind, "greeting");
  const failed = await h.client.get(bad.task.id, { waitMs: 10_000 });
  assert.equal(failed.state, "failed");
  assert.equal(failed.error.code, "invalid_input");
  child.kill("SIGTERM");
  const [code, signal] = await once(child, "exit");
  assert.equal(signal, null, stderr);
  assert.equal(code, 0, stderr);
});
