#!/usr/bin/env node
/**
 * webhook-inbox: operate an inbox from a shell, through its admin API (HTTP only).
 *
 *   webhook-inbox status
 *   webhook-inbox sources [--all]
 *   webhook-inbox list [--status failed] [--source stripe] [--type T] [--since T] [--until T] [--limit 50] [--cursor c]
 *   webhook-inbox show <source> <id>
 *   webhook-inbox replay <source> <id> [--subscriber NAME] [--force]
 *   webhook-inbox replay --failed [--source stripe] [--type T] [--since T] [--until T]
 *   webhook-inbox send <source> [file] [--id ID] [--event TYPE] [--provider P]
 *   webhook-inbox incidents [--status open|resolved] [--limit N]
 *
 * Exit codes: 0 done; 1 the inbox refused or could not be reached; 2 bad usage.
 */
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { createAdminClient, InboxError } from "./lib/admin-client.mjs";
import { table } from "./lib/format.mjs";
import { resolveInbox } from "./lib/local-inbox.mjs";
import { sendDelivery } from "./lib/send.mjs";
import { show } from "./lib/show.mjs";
import { sources } from "./lib/sources.mjs";
import { status, STATUSES } from "./lib/status.mjs";
import { HELP } from "./lib/help.mjs";
import { incidents } from "./lib/incidents.mjs";

/** The project root: where `.dev.vars` and `npm run dev`'s URL record are. */
const ROOT = fileURLToPath(new URL("../..", import.meta.url));
/** Per call of the bulk replay endpoint (the API's default; its maximum is 500). */
const BULK_REPLAY_BATCH = 100;

const OPTIONS = /** @type {const} */ ({
  url: { type: "string" },
  token: { type: "string" },
  json: { type: "boolean" },
  help: { type: "boolean", short: "h" },
  status: { type: "string" },
  source: { type: "string" },
  limit: { type: "string" },
  cursor: { type: "string" },
  type: { type: "string" },
  since: { type: "string" },
  until: { type: "string" },
  unhandled: { type: "boolean" },
  force: { type: "boolean" },
  subscriber: { type: "string" },
  failed: { type: "boolean" },
  id: { type: "string" },
  event: { type: "string" },
  provider: { type: "string" },
  all: { type: "boolean" },
});

/** @param {string} message */
function usage(message) {
  return new InboxError(`${message} (see webhook-inbox --help)`, { exitCode: 2 });
}

/**
 * Runs the CLI with `argv` (without node and the script), writing to `out`; resolves to the exit code.
 * @param {string[]} argv
 * @param {{ env?: NodeJS.ProcessEnv, out?: (line: string) => void, err?: (line: string) => void, root?: string }} [io]
 * `root`: where `.dev.vars` is read (the project's by default).
 * @returns {Promise<number>}
 */
export async function main(argv, io = {}) {
  const env = io.env ?? process.env;
  const root = io.root ?? ROOT;
  const out = io.out ?? ((line) => process.stdout.write(`${line}\n`));
  const err = io.err ?? ((line) => process.stderr.write(`${line}\n`));
  try {
    let parsed;
    try {
      parsed = parseArgs({ args: argv, options: OPTIONS, allowPositionals: true, strict: true });
    } catch (error) {
      // parseArgs explains at length; its first sentence is the one-line error.
      throw usage(error instanceof Error ? (error.message.split(/\.\s/)[0] ?? "bad arguments") : "bad arguments");
    }
    const { values, positionals } = parsed;
    const [command, ...rest] = positionals;
    if (values.help || command === "help") {
      out(HELP);
      return 0;
    }
    if (!command) throw usage("no command given");
    const { url, token } = resolveInbox(values, env, root);
    if (!/^https?:\/\/[^/]/.test(url) || !URL.canParse(url)) throw usage(`not an http(s) URL: ${url}`);
    if (command === "send") {
      if (rest.length < 1 || rest.length > 2) throw usage("expected: webhook-inbox send <source> [file]");
      const [source, file] = /** @type {[string, string | undefined]} */ (rest);
      const sent = await sendDelivery({ source, file, id: values.id, eventType: values.event, provider: values.provider, url, root, env });
      if (values.json) out(JSON.stringify({ source, id: sent.id, eventType: sent.eventType, status: sent.answer }, null, 2));
      else out(`${source}/${sent.id} (${sent.eventType}): ${sent.answer}\nsee it: npx webhook-inbox show ${source} ${sent.id}`);
      return 0;
    }
    if (!token) throw usage("no admin token: set INBOX_ADMIN_TOKEN or pass --token (for a local inbox, ADMIN_TOKEN in .dev.vars)");
    const client = createAdminClient({ url, token });
    const print = values.json ? (/** @type {unknown} */ json) => out(JSON.stringify(json, null, 2)) : null;

    switch (command) {
      case "status":
        expectArguments(rest, 0, "status");
        await status(client, print, out);
        break;
      case "sources":
        expectArguments(rest, 0, "sources [--all]");
        await sources(client, print, out, { all: Boolean(values.all) });
        break;
      case "list":
        expectArguments(rest, 0, "list [--status S] [--source S] [--limit N]");
        await list(client, values, print, out);
        break;
      case "show":
        expectArguments(rest, 2, "show <source> <id>");
        await show(client, deliveryPath(...(/** @type {[string, string]} */ (rest))), print, out);
        break;
      case "replay":
        if (values.failed) {
          expectArguments(rest, 0, "replay --failed [--source S] [--subscriber NAME] [--type T] [--since T] [--until T]");
          await replayFailed(client, filterOf(values), print, out);
        } else {
          expectArguments(rest, 2, "replay <source> <id> [--subscriber NAME] [--force], or replay --failed");
          await replayOne(client, /** @type {[string, string]} */ (rest), { force: Boolean(values.force), subscriber: values.subscriber }, print, out);
        }
        break;
      case "incidents":
        await incidents(client, rest, values, print, out);
        break;
      default:
        throw usage(`unknown command "${command}"`);
    }
    return 0;
  } catch (error) {
    if (error instanceof InboxError) {
      err(`webhook-inbox: ${error.message}`);
      return error.exitCode;
    }
    err(`webhook-inbox: unexpected error: ${error instanceof Error ? error.message : String(error)}`);
    return 1;
  }
}

/** @param {string[]} rest @param {number} count @param {string} form */
function expectArguments(rest, count, form) {
  if (rest.length !== count) throw usage(`expected: webhook-inbox ${form}`);
}

/**
 * The filters a listing and a bulk replay share, in the admin API's names (the API checks the times).
 * @param {{ source?: string, subscriber?: string, type?: string, since?: string, until?: string }} values
 */
function filterOf(values) {
  return Object.fromEntries(
    Object.entries({ source: values.source, subscriber: values.subscriber, eventType: values.type, since: values.since, until: values.until }).filter(
      ([, value]) => value !== undefined,
    ),
  );
}

/** @param {string} source @param {string} id */
function deliveryPath(source, id) {
  return `/deliveries/${encodeURIComponent(source)}/${encodeURIComponent(id)}`;
}

/**
 * @typedef {import("./lib/admin-client.mjs").AdminClient} AdminClient
 * @typedef {((json: unknown) => void) | null} Printer
 * @typedef {(line: string) => void} Out
 */

/**
 * @param {AdminClient} client
 * @param {{ status?: string, source?: string, type?: string, since?: string, until?: string, unhandled?: boolean, limit?: string, cursor?: string }} values
 * @param {Printer} print
 * @param {Out} out
 */
async function list(client, values, print, out) {
  if (values.status !== undefined && !STATUSES.includes(values.status)) throw usage(`--status must be one of ${STATUSES.join(", ")}`);
  if (values.limit !== undefined && !/^\d+$/.test(values.limit)) throw usage("--limit must be a whole number");
  const query = new URLSearchParams();
  if (values.status !== undefined) query.set("status", values.status);
  for (const [name, value] of Object.entries(filterOf(values))) query.set(name, value);
  if (values.unhandled) query.set("unhandled", "true");
  for (const name of /** @type {const} */ (["limit", "cursor"])) if (values[name] !== undefined) query.set(name, values[name]);
  const page = await client.get(`/deliveries${query.size > 0 ? `?${query}` : ""}`);
  if (print) return print(page);
  if (page.deliveries.length === 0) return out("no deliveries");
  /** @type {any[]} */
  const deliveries = page.deliveries;
  out(
    table(
      ["RECEIVED", "SOURCE", "ID", "TYPE", "STATUS", "ATTEMPTS", "ERROR"],
      deliveries.map((d) => [d.receivedAt, d.source, d.id, d.eventType, d.status === "done" && d.handled === false ? "done (unhandled)" : d.status, d.attempts, d.error]),
    ),
  );
  if (page.nextCursor) {
    const repeated = [...["status", "source", "type", "since", "until"].flatMap((name) => (values[name] !== undefined ? [`--${name} ${values[name]}`] : [])), ...(values.unhandled ? ["--unhandled"] : [])];
    out(`\nmore: webhook-inbox list --cursor ${page.nextCursor}${repeated.map((flag) => ` ${flag}`).join("")}`);
  }
}

/**
 * @param {AdminClient} client @param {[string, string]} ref @param {{ force: boolean, subscriber?: string }} options
 * @param {Printer} print @param {Out} out
 */
async function replayOne(client, [source, id], { force, subscriber }, print, out) {
  const query = new URLSearchParams();
  if (subscriber !== undefined) query.set("subscriber", subscriber);
  if (force) query.set("force", "true");
  const result = await client.post(`${deliveryPath(source, id)}/replay${query.size > 0 ? `?${query}` : ""}`).catch((error) => {
    // The API names its query parameter; here the user's word for it is the flag.
    if (error instanceof InboxError && error.code === "conflict") error.message = error.message.replace("add ?force=true", "pass --force");
    throw error;
  });
  if (print) return print(result);
  out(`replayed ${source}/${id}${subscriber === undefined ? "" : ` for ${subscriber}`}: back to received, attempts reset, enqueued`);
}

/**
 * Calls the bulk endpoint until no failed delivery is left, but replays at most as many as were
 * failed at the start: one that fails again at once is not replayed a second time in this run.
 * @param {AdminClient} client @param {Record<string, string>} filter @param {Printer} print @param {Out} out
 */
async function replayFailed(client, filter, print, out) {
  let replayed = 0;
  let budget = Infinity;
  let remaining = 0;
  do {
    const limit = Math.min(BULK_REPLAY_BATCH, budget - replayed);
    if (limit <= 0) break;
    const result = await client.post("/replay", { status: "failed", ...filter, limit });
    if (budget === Infinity) budget = result.replayed + result.remaining;
    replayed += result.replayed;
    remaining = result.remaining;
    if (result.replayed === 0) break;
  } while (remaining > 0);
  if (print) return print({ replayed, remaining });
  const { source, ...narrower } = filter;
  const of = Object.entries(narrower).map(([name, value]) => `${name} ${value}`);
  // What is known now is what was put back; how the runs end is not: a replayed delivery may fail
  // again a second later (and be counted among the failed by then), so no "still failed" is claimed.
  const what = `${replayed} failed deliver${replayed === 1 ? "y" : "ies"}${source ? ` of ${source}` : ""}${of.length > 0 ? ` (${of.join(", ")})` : ""}`;
  if (replayed === 0) return out(`replayed nothing: no failed delivery matched${remaining > 0 ? ` (${remaining} failed match, none replayable)` : ""}`);
  out(`replayed ${what}: back on the queue, results pending (webhook-inbox list --status failed shows any that fail again)`);
}

// Run when executed (also through npm's bin symlink), not when imported by a test.
const invokedPath = process.argv[1] ? (await import("node:fs")).realpathSync(process.argv[1]) : "";
if (invokedPath === fileURLToPath(import.meta.url)) {
  // A reader that stops early (`webhook-inbox show … | head`) closes the pipe: that is not an error.
  process.stdout.on("error", (error) => {
    if (/** @type {NodeJS.ErrnoException} */ (error).code === "EPIPE") process.exit(process.exitCode ?? 0);
    throw error;
  });
  process.exitCode = await main(process.argv.slice(2));
}
