#!/usr/bin/env node
/**
 * `npm run setup:cloudflare`: creates the inbox's Cloudflare resources and prints what it did.
 *
 *   1. checks the wrangler login            wrangler whoami
 *   2. creates the D1 database              wrangler d1 create <database>   (kept if it exists)
 *   3. writes its id into wrangler.toml     (database_id)
 *   4. creates the queues                   wrangler queues create <queue>  (each; kept if it exists)
 *   5. applies the migrations               wrangler d1 migrations apply <database> --remote
 *
 * Then it prints the steps it cannot do for you: one `wrangler secret put` per source and for
 * ADMIN_TOKEN (values only you have), and `wrangler deploy`. Names come from wrangler.toml and
 * src/sources.ts. `--dry-run` prints the commands and changes nothing.
 */
import { spawn } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { findDatabaseId, parseDatabaseId, PLACEHOLDER_DATABASE_ID, resourcesOf, secretNames, setDatabaseId } from "./lib/cloudflare-setup.mjs";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
// Wrangler's entry, run with this Node (22 under npm scripts). Tests point it at a stand-in.
const WRANGLER = process.env.WEBHOOK_INBOX_WRANGLER ?? join(ROOT, "node_modules", "wrangler", "bin", "wrangler.js");

const HELP = `Usage: npm run setup:cloudflare -- [--dry-run] [--location weur|eeur|apac|oc|wnam|enam] [--config wrangler.toml]

Creates the D1 database and the queues named in wrangler.toml, writes the database id into it,
and applies the migrations remotely. Needs \`npx wrangler login\` first.
  --dry-run    print the commands, run and change nothing`;

/** @param {string[]} args */
function shown(args) {
  return `npx wrangler ${args.map((arg) => (/^[\w./:=@-]+$/.test(arg) ? arg : JSON.stringify(arg))).join(" ")}`;
}

/**
 * Runs wrangler, echoing its output, and resolves with its exit code and output.
 * @param {string[]} args
 * @returns {Promise<{ code: number, output: string }>}
 */
function wrangler(args) {
  console.log(`\n$ ${shown(args)}`);
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [WRANGLER, ...args], { cwd: ROOT, stdio: ["inherit", "pipe", "pipe"] });
    let output = "";
    child.stdout.on("data", (chunk) => (process.stdout.write(chunk), (output += chunk)));
    child.stderr.on("data", (chunk) => (process.stderr.write(chunk), (output += chunk)));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code: code ?? 1, output }));
  });
}

class SetupError extends Error {}

/** @param {{ code: number, output: string }} result @param {string} what */
function mustSucceed(result, what) {
  if (result.code !== 0) throw new SetupError(`${what} failed (wrangler exited ${result.code}); fix the cause above and run again: finished steps are kept`);
  return result;
}

async function main() {
  const { values } = parseArgs({
    options: { "dry-run": { type: "boolean" }, location: { type: "string" }, config: { type: "string" }, help: { type: "boolean", short: "h" } },
    strict: true,
  });
  if (values.help) return console.log(HELP);
  const dryRun = Boolean(values["dry-run"]);
  const configPath = values.config ?? join(ROOT, "wrangler.toml");
  const toml = readFileSync(configPath, "utf8");
  const { worker, database, databaseId, queues } = resourcesOf(toml);
  const secrets = secretNames(readFileSync(join(ROOT, "src", "sources.ts"), "utf8"));
  const configArgs = values.config ? ["--config", values.config] : [];
  const createArgs = ["d1", "create", database, ...(values.location ? ["--location", values.location] : []), ...configArgs];
  const migrateArgs = ["d1", "migrations", "apply", database, "--remote", ...configArgs];
  const done = [];

  if (dryRun) {
    console.log("dry run: these are the commands setup:cloudflare runs; nothing is run or changed.\n");
    for (const args of [["whoami"], createArgs]) console.log(`$ ${shown(args)}`);
    console.log(`# then: database_id in ${values.config ?? "wrangler.toml"} set to the id it prints`);
    for (const queue of queues) console.log(`$ ${shown(["queues", "create", queue, ...configArgs])}`);
    console.log(`$ ${shown(migrateArgs)}`);
  } else {
    mustSucceed(await wrangler(["whoami"]), "checking the login (run `npx wrangler login`)");

    const created = await wrangler(createArgs);
    let id = created.code === 0 ? parseDatabaseId(created.output) : null;
    if (created.code !== 0) {
      if (!/already exists/i.test(created.output)) mustSucceed(created, `creating D1 database ${database}`);
      id = findDatabaseId(mustSucceed(await wrangler(["d1", "list", "--json", ...configArgs]), "listing D1 databases").output, database);
      done.push(`D1 database ${database}: already existed, kept (${id ?? "id not found"})`);
    } else {
      done.push(`D1 database ${database}: created (${id ?? "id not found in the output"})`);
    }
    if (!id) throw new SetupError(`could not read the id of D1 database ${database}; put it into ${configPath} by hand (wrangler d1 list)`);
    if (databaseId !== id) {
      writeFileSync(configPath, setDatabaseId(readFileSync(configPath, "utf8"), id));
      done.push(`${values.config ?? "wrangler.toml"}: database_id ${databaseId === PLACEHOLDER_DATABASE_ID ? "placeholder" : databaseId} → ${id}`);
    }

    for (const queue of queues) {
      const result = await wrangler(["queues", "create", queue, ...configArgs]);
      if (result.code !== 0 && !/already (exists|taken)/i.test(result.output)) mustSucceed(result, `creating queue ${queue}`);
      done.push(`queue ${queue}: ${result.code === 0 ? "created" : "already existed, kept"}`);
    }

    mustSucceed(await wrangler(migrateArgs), "applying the migrations");
    done.push(`migrations applied to ${database} (remote)`);
    console.log(`\ndone:\n${done.map((line) => `  - ${line}`).join("\n")}`);
  }

  console.log(`\nnext, by hand (values only you have; each is prompted for, never echoed):`);
  for (const name of secrets) console.log(`$ ${shown(["secret", "put", name, ...configArgs])}`);
  console.log(`$ ${shown(["deploy", ...configArgs])}`);
  console.log(`\nthen point each provider at https://${worker}.<your-subdomain>.workers.dev/webhooks/<source>, and check with:`);
  console.log(`$ INBOX_URL=https://${worker}.<your-subdomain>.workers.dev INBOX_ADMIN_TOKEN=… npx webhook-inbox status`);
}

main().catch((error) => {
  console.error(`setup:cloudflare: ${error instanceof SetupError || error?.code?.startsWith?.("ERR_PARSE_ARGS") ? error.message : error?.stack ?? error}`);
  process.exitCode = 1;
});
