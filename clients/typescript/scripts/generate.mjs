// Regenerates src/generated/api.ts from the service's OpenAPI document: the Python app
// prints it (scripts/openapi.py, sorted keys), openapi-typescript turns it into types.
// `node scripts/generate.mjs` writes the committed file; `--out DIR` writes DIR/api.ts
// instead (the staleness test compares the two byte for byte); `--openapi FILE` reads the
// document from FILE instead of running the Python. The Python is $AGENTRUN_PYTHON, else
// the repository's .venv, else python3.
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import openapiTS, { BOOLEAN, NULL, NUMBER, STRING, UNKNOWN, astToString, tsRecord, tsUnion } from "openapi-typescript";
import ts from "typescript";

const here = dirname(fileURLToPath(import.meta.url));
const pkg = resolve(here, "..");
const root = resolve(pkg, "../..");

function python() {
  if (process.env.AGENTRUN_PYTHON) return process.env.AGENTRUN_PYTHON;
  const venv = join(root, ".venv", "bin", "python");
  return existsSync(venv) ? venv : "python3";
}

const args = process.argv.slice(2);
const outIndex = args.indexOf("--out");
const outDir = outIndex >= 0 ? resolve(args[outIndex + 1]) : join(pkg, "src", "generated");
const docIndex = args.indexOf("--openapi");

const json =
  docIndex >= 0
    ? readFileSync(args[docIndex + 1], "utf8")
    : execFileSync(python(), [join(here, "openapi.py")], {
        encoding: "utf8",
        maxBuffer: 64 * 1024 * 1024,
        env: { ...process.env, PYTHONPATH: [root, process.env.PYTHONPATH].filter(Boolean).join(":") },
      });
// `JsonValue` (any JSON value) refers to itself, which a property of an interface cannot:
// it becomes the union of JSON's kinds, its arrays' and objects' items `unknown`.
const JSON_VALUE = "#/components/schemas/JsonValue";
const jsonValue = tsUnion([NULL, BOOLEAN, NUMBER, STRING, ts.factory.createArrayTypeNode(UNKNOWN), tsRecord(STRING, UNKNOWN)]);
const ast = await openapiTS(JSON.parse(json), {
  alphabetize: true,
  defaultNonNullable: false,
  transform: (_schema, options) => (options.path === JSON_VALUE ? jsonValue : undefined),
});
const header = [
  "// Generated from the service's OpenAPI document by scripts/generate.mjs",
  "// (`npm run generate`): do not edit. A test fails when it is stale.",
  "",
].join("\n");
mkdirSync(outDir, { recursive: true });
writeFileSync(join(outDir, "api.ts"), header + astToString(ast));
