#!/usr/bin/env node
// `npm run dev`: the local inbox in one command.
// 1. creates .dev.vars from the committed .dev.vars.example (dev-only secrets) if it is missing,
//    or adds the vars an older .dev.vars lacks, and warns about secrets whose meaning changed;
// 2. applies the D1 migrations to the local database (to `--persist-to <dir>` when given);
// 3. starts `wrangler dev` on port 8787, or on `--port <n>`; other arguments are passed through
//    (`npm run dev -- --port 8788 --ip 127.0.0.1`).
import { spawn, spawnSync } from "node:child_process";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { option } from "./lib/args.mjs";
import { prepareDevVars } from "./lib/dev-vars.mjs";

const DEFAULT_PORT = "8787";

const root = fileURLToPath(new URL("../..", import.meta.url));
process.chdir(root);
// Run wrangler's entry with this very Node (22 under npm scripts, from the `node` devDependency),
// not whichever `node` a `wrangler` shim on the PATH would find.
const WRANGLER_ENTRY = join(root, "node_modules", "wrangler", "bin", "wrangler.js");

prepareDevVars(root);

const extra = process.argv.slice(2);
const shared = [];
for (const name of ["--persist-to", "--config"]) {
  const value = option(extra, name);
  if (value !== undefined) shared.push(name, value);
}
const migrate = spawnSync(process.execPath, [WRANGLER_ENTRY, "d1", "migrations", "apply", "webhook-inbox", "--local", ...shared], {
  stdio: "inherit",
  env: { ...process.env, CI: "true" }, // no interactive confirmation
});
if (migrate.status !== 0) process.exit(migrate.status ?? 1);

const port = option(extra, "--port") === undefined ? ["--port", DEFAULT_PORT] : [];
const dev = spawn(process.execPath, [WRANGLER_ENTRY, "dev", ...port, ...extra], { stdio: "inherit" });
for (const signal of ["SIGINT", "SIGTERM"]) process.on(signal, () => dev.kill(signal));
dev.on("exit", (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
