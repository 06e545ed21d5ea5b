#!/usr/bin/env node
// `npm run dev`: the local inbox in one command.
// 1. creates .dev.vars from the committed .dev.vars.example (dev-only secrets) if it is missing,
//    or adds the vars an older .dev.vars lacks, and warns about secrets whose meaning changed;
// 2. applies the D1 migrations to the local database (to `--persist-to <dir>` when given), quietly:
//    one line, or wrangler's whole output when they fail;
// 3. starts `wrangler dev` on port 8787, or on `--port <n>`; other arguments are passed through
//    (`npm run dev -- --port 8788 --ip 127.0.0.1`); once it answers, prints one short banner (the
//    URL, the dashboard, the demo, the CLI) and records the URL for the CLI (lib/local-inbox.mjs);
// 4. restarts `wrangler dev` when .dev.vars changes: wrangler reads it only at start, and a secret
//    changed under a running inbox would otherwise answer 401 until someone restarted it.
import { spawn, spawnSync } from "node:child_process";
import { readFileSync, unwatchFile, watchFile } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { option } from "./lib/args.mjs";
import { prepareDevVars } from "./lib/dev-vars.mjs";
import { announceDevUrl } from "./lib/local-inbox.mjs";

const DEFAULT_PORT = "8787";
/** How often .dev.vars is looked at (polling: editors that replace the file are seen too). */
const WATCH_INTERVAL_MS = 500;

const root = fileURLToPath(new URL("../..", import.meta.url));
process.chdir(root);
// Run wrangler's entry with this very Node (22 under npm scripts, from the `node` devDependency),
// not whichever `node` a `wrangler` shim on the PATH would find.
const WRANGLER_ENTRY = join(root, "node_modules", "wrangler", "bin", "wrangler.js");
const DEV_VARS = join(root, ".dev.vars");

prepareDevVars(root);

const extra = process.argv.slice(2);
const shared = [];
for (const name of ["--persist-to", "--config"]) {
  const value = option(extra, name);
  if (value !== undefined) shared.push(name, value);
}
const migrate = spawnSync(process.execPath, [WRANGLER_ENTRY, "d1", "migrations", "apply", "webhook-inbox", "--local", ...shared], {
  encoding: "utf8",
  env: { ...process.env, CI: "true" }, // no interactive confirmation
});
if (migrate.status !== 0) {
  process.stdout.write(migrate.stdout ?? "");
  process.stderr.write(migrate.stderr ?? "");
  process.exit(migrate.status ?? 1);
}
const applied = new Set([...(migrate.stdout ?? "").matchAll(/\b(\d{4}_[\w-]+\.sql)\b/g)].map((match) => match[1]));
console.log(applied.size > 0 ? `D1 (local): applied ${applied.size} migration${applied.size === 1 ? "" : "s"}` : "D1 (local): migrations up to date");

const port = option(extra, "--port") ?? DEFAULT_PORT;
const host = option(extra, "--ip") ?? "localhost";
const url = `http://${host === "0.0.0.0" || host === "*" ? "localhost" : host}:${port}`;
const args = [WRANGLER_ENTRY, "dev", ...(option(extra, "--port") === undefined ? ["--port", DEFAULT_PORT] : []), ...extra];

/** @type {import("node:child_process").ChildProcess | null} */
let dev = null;
let stopping = false;
let restarting = false;
let removeAnnouncement = () => {};

function start(first) {
  const child = spawn(process.execPath, args, { stdio: "inherit" });
  dev = child;
  child.on("exit", (code, signal) => {
    if (restarting && dev === child) {
      restarting = false;
      start(false);
      return;
    }
    if (dev !== child) return;
    removeAnnouncement();
    process.exit(code ?? (signal ? 1 : 0));
  });
  void announceWhenUp(child, first);
}

/** Waits for /health, then prints the banner (the first time) or one line (after a restart). */
async function announceWhenUp(child, first) {
  for (;;) {
    if (dev !== child || child.exitCode !== null) return;
    // Any answer will do (503 config_invalid too: the banner is where the user looks next).
    const up = await fetch(`${url}/health`, { signal: AbortSignal.timeout(2_000) }).then(() => true, () => false);
    if (up) break;
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  removeAnnouncement = announceDevUrl(root, url);
  if (!first) return console.log(`\nwebhook-inbox: restarted with the new .dev.vars, at ${url}\n`);
  console.log(
    [
      "",
      `webhook-inbox is running at ${url}`,
      `  webhooks   POST ${url}/webhooks/<source>  (sources: src/sources.ts; secrets: .dev.vars)`,
      `  dashboard  ${url}/ui  (sign in with ADMIN_TOKEN from .dev.vars)`,
      "  try it     npx webhook-inbox send stripe     (a signed sample; or npm run demo)",
      "  CLI        npx webhook-inbox status | list | show | replay   (--help)",
      "  .dev.vars  changes restart the inbox; another port: npm run dev -- --port 8788",
      "",
    ].join("\n"),
  );
}

let lastDevVars = readFileSync(DEV_VARS, "utf8");
watchFile(DEV_VARS, { interval: WATCH_INTERVAL_MS }, () => {
  let text;
  try {
    text = readFileSync(DEV_VARS, "utf8");
  } catch {
    return; // being replaced: the next look sees the new file
  }
  if (text === lastDevVars || stopping || !dev) return;
  lastDevVars = text;
  console.error("\n!!! .dev.vars changed: restarting wrangler dev so that the inbox uses the new values\n");
  restarting = true;
  removeAnnouncement();
  dev.kill("SIGTERM");
});

for (const signal of ["SIGINT", "SIGTERM"]) {
  process.on(signal, () => {
    stopping = true;
    unwatchFile(DEV_VARS);
    removeAnnouncement();
    dev?.kill(signal);
  });
}
start(true);
