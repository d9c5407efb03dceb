// Proves that the committed dist/ is the build of src/: type-checks src/,
// builds it into a scratch folder with the pinned TypeScript, and compares
// that build with dist/ file by file. Run with `npm run check` after
// `npm ci` (TypeScript is the only dev dependency).

import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("..", import.meta.url));
const tsc = join(root, "node_modules", "typescript", "bin", "tsc");
if (!existsSync(tsc)) {
  console.error("check: TypeScript is not installed here; run `npm ci` in sdk/typescript first");
  process.exit(2);
}
const run = (...args) => execFileSync(process.execPath, [tsc, "-p", join(root, "tsconfig.json"), ...args], { stdio: "inherit" });

run("--noEmit");
const out = mkdtempSync(join(tmpdir(), "docket-sdk-dist-"));
try {
  run("--outDir", out);
  const list = (dir) => readdirSync(dir, { recursive: true }).filter((f) => f.endsWith(".js") || f.endsWith(".d.ts")).sort();
  const built = list(out);
  const committed = list(join(root, "dist"));
  const problems = [];
  for (const f of built) {
    if (!committed.includes(f)) problems.push(`missing from dist/: ${f}`);
    else if (!readFileSync(join(out, f)).equals(readFileSync(join(root, "dist", f)))) problems.push(`differs from the build: dist/${f}`);
  }
  for (const f of committed) if (!built.includes(f)) problems.push(`not built from src/: dist/${f}`);
  if (problems.length > 0) {
    console.error(`check: dist/ is not the build of src/ (run \`npm run build\` and commit dist/):\n  ${problems.join("\n  ")}`);
    process.exit(1);
  }
  console.log(`check: src/ type-checks and dist/ is its build (${built.length} files)`);
} finally {
  rmSync(out, { recursive: true, force: true });
}
