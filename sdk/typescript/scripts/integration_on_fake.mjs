// Runs test/integration.test.mjs against the fake server of testkit/ (a
// separate process, lease TTL 2 s), to exercise the integration tests where
// no Docket server is at hand. The real check is against `docket serve`:
// the tests that need what the fake does not model (in-process workflows,
// dependencies, tenant limits, pauses, concurrency keys) skip here.
import { spawn } from "node:child_process";
import { once } from "node:events";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("..", import.meta.url));
const ttl = "2000";
const fake = spawn(process.execPath, ["testkit/fake_docket.mjs", "--lease-ttl-ms", ttl, "--heartbeat-ms", "500"], {
  cwd: root,
  stdio: ["ignore", "pipe", "inherit"],
});
const [first] = await once(createInterface({ input: fake.stdout }), "line");
const { url, admin_key } = JSON.parse(first);
const tests = spawn(process.execPath, ["--test", "test/integration.test.mjs"], {
  cwd: root,
  stdio: "inherit",
  env: { ...process.env, DOCKET_URL: url, DOCKET_ADMIN_KEY: admin_key, DOCKET_LEASE_TTL_MS: ttl, DOCKET_SERVER_IS_FAKE: "1" },
});
const [code] = await once(tests, "exit");
fake.kill("SIGTERM");
process.exit(code ?? 1);
