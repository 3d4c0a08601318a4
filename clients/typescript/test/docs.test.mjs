// Every ```js example of docs/client-typescript.md (and of the README), run against the service the suite
// started (AGENTRUN_BASE_URL, AGENTRUN_API_KEY, AGENTRUN_WEBHOOK_SECRET). An example is
// run as a module of its own, after an `<!-- before … -->` comment's code and before an
// `<!-- after … -->` comment's (the checks), with `assert`, a `client` and a scripted
// `model` defined unless it defines them, and the package's exports it does not import.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { test } from "node:test";
import { fileURLToPath, pathToFileURL } from "node:url";
import * as agentrun from "@agentrun/client";

const here = dirname(fileURLToPath(import.meta.url));
const ROOT = join(here, "..", "..", "..");
const DOCS = ["docs/client-typescript.md", "README.md"];
const OUT = join(here, ".docs"); // inside the package: `@agentrun/client` resolves to it

/** The doc's examples: each ```js block with the code of the comments around it. */
export function examples(markdown) {
  const found = [];
  const pattern = /(?:<!-- before\n([\s\S]*?)-->\n)?```js\n([\s\S]*?)```\n(?:<!-- after\n([\s\S]*?)-->\n)?/g;
  for (const m of markdown.matchAll(pattern)) {
    const line = markdown.slice(0, m.index).split("\n").length;
    found.push({ line, before: m[1] ?? "", code: m[2], after: m[3] ?? "" });
  }
  return found;
}

function program({ before, code, after }) {
  const declared = (name) => new RegExp(`\\b(?:const|let|var|function|class)\\s+${name}\\b`).test(code);
  const imported = new Set();
  for (const m of code.matchAll(/import\s*\{([^}]*)\}\s*from\s*"@agentrun\/client"/g)) {
    for (const name of m[1].split(",")) imported.add(name.trim().split(/\s+as\s+/).pop());
  }
  const names = Object.keys(agentrun).filter((n) => !imported.has(n) && !declared(n));
  const prelude = [
    'import assert from "node:assert/strict";',
    'import * as __agentrun from "@agentrun/client";',
    `const { ${names.join(", ")} } = __agentrun;`,
  ];
  if (!declared("client")) prelude.push("const client = new __agentrun.AgentrunClient();");
  if (!declared("model")) prelude.push('const model = { provider: "scripted", name: "demo" };');
  return [...prelude, before, code, after].join("\n");
}

const markdown = readFileSync(join(ROOT, DOCS[0]), "utf8");
const found = DOCS.flatMap((doc) =>
  examples(readFileSync(join(ROOT, doc), "utf8")).map((example) => ({ ...example, doc })),
);

test("the guide and the README have their examples", () => {
  assert.ok(found.filter((e) => e.doc === DOCS[0]).length >= 9, `only ${found.length} examples found`);
  assert.ok(found.some((e) => e.doc === "README.md"));
  assert.ok(process.env.AGENTRUN_BASE_URL, "AGENTRUN_BASE_URL names the service");
});

mkdirSync(OUT, { recursive: true });
for (const example of found) {
  test(`${example.doc}, the example at line ${example.line}`, async () => {
    const file = join(OUT, `example-${example.doc.replace(/\W/g, "_")}-${example.line}.mjs`);
    writeFileSync(file, program(example));
    const log = console.log;
    console.log = () => undefined; // (the examples print what they show)
    try {
      await import(pathToFileURL(file).href);
    } finally {
      console.log = log;
    }
  });
}

test("the guide's TypeScript examples type-check against dist/*.d.ts", () => {
  const blocks = [...markdown.matchAll(/```ts\n([\s\S]*?)```\n/g)].map((m) => m[1]);
  assert.ok(blocks.length >= 1);
  const files = blocks.map((code, i) => {
    const file = join(OUT, `types-${i}.ts`);
    writeFileSync(file, `${code}export {};\n`);
    return file;
  });
  const tsc = join(here, "..", "node_modules", "typescript", "bin", "tsc");
  const flags = ["--noEmit", "--strict", "--skipLibCheck", "--module", "nodenext", "--moduleResolution", "nodenext", "--target", "es2022", "--lib", "es2022,dom"];
  const done = spawnSync(process.execPath, [tsc, ...flags, ...files], { encoding: "utf8" });
  assert.equal(done.status, 0, done.stdout + done.stderr);
});
