// Builds dist/: esbuild bundles the ESM entries (the client; the webhook executor) with
// openapi-fetch and standardwebhooks inside, so the package has no runtime dependency;
// tsc checks the sources (strict) and emits the .d.ts files.
import { execFileSync } from "node:child_process";
import { rmSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";

const pkg = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const tsc = join(pkg, "node_modules", "typescript", "bin", "tsc");

rmSync(join(pkg, "dist"), { recursive: true, force: true });
execFileSync(process.execPath, [tsc, "-p", pkg, "--emitDeclarationOnly"], { stdio: "inherit" });
await build({
  absWorkingDir: pkg,
  entryPoints: { index: "src/index.ts", webhooks: "src/webhooks.ts" },
  outdir: "dist",
  bundle: true,
  splitting: true,
  format: "esm",
  platform: "neutral",
  mainFields: ["module", "main"],
  target: "es2022",
  sourcemap: true,
  logLevel: "warning",
});
