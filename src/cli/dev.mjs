#!/usr/bin/env node
// `npm run dev`: the local inbox in one command.
// 1. creates .dev.vars from the committed .dev.vars.example (dev-only secrets) if it is missing;
// 2. applies the D1 migrations to the local database;
// 3. starts `wrangler dev` on port 8787 (extra arguments are passed through).
import { spawnSync, spawn } from "node:child_process";
import { appendFileSync, copyFileSync, existsSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("../..", import.meta.url));
process.chdir(root);

if (!existsSync(".dev.vars")) {
  copyFileSync(".dev.vars.example", ".dev.vars");
  console.log("created .dev.vars from .dev.vars.example (dev-only secrets; never use them in production)");
} else {
  // A .dev.vars from an older checkout lacks the secrets of sources added since: add those
  // (never overwriting a value the developer set), so new sources do not answer 503.
  const present = new Set(varNames(readFileSync(".dev.vars", "utf8")));
  const example = readFileSync(".dev.vars.example", "utf8").split("\n");
  const missing = example.filter((line) => varNames(line).some((name) => !present.has(name)));
  if (missing.length > 0) {
    appendFileSync(".dev.vars", `\n# Added from .dev.vars.example by npm run dev:\n${missing.join("\n")}\n`);
    console.log(`added to .dev.vars: ${missing.map((line) => varNames(line)[0]).join(", ")}`);
  }
}

/** The variable names defined in dotenv text. */
function varNames(text) {
  return [...text.matchAll(/^\s*([A-Za-z_][A-Za-z0-9_]*)\s*=/gm)].map((match) => match[1]);
}

const extra = process.argv.slice(2);
const persist = extra.includes("--persist-to") ? ["--persist-to", extra[extra.indexOf("--persist-to") + 1]] : [];
const migrate = spawnSync("wrangler", ["d1", "migrations", "apply", "webhook-inbox", "--local", ...persist], {
  stdio: "inherit",
  env: { ...process.env, CI: "true" }, // no interactive confirmation
});
if (migrate.status !== 0) process.exit(migrate.status ?? 1);

const args = ["dev", "--port", "8787", ...extra];
const dev = spawn("wrangler", args, { stdio: "inherit" });
for (const signal of ["SIGINT", "SIGTERM"]) process.on(signal, () => dev.kill(signal));
dev.on("exit", (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
