/**
 * Drives the real local runtime from outside, as a provider would: `wrangler dev` on a free
 * port with its own state directory and its own dev secrets, real HTTP, and a hard stop
 * (SIGKILL of the whole process group) that is always run. On D1 by default; on Postgres
 * (wrangler.toml's `postgres` environment) with `new LocalInbox({ postgres: { url } })`.
 */
import { spawn, execFile } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as delay } from "node:timers/promises";
import { promisify } from "node:util";
import { fileURLToPath } from "node:url";
import pg from "pg";

export const ROOT = fileURLToPath(new URL("../..", import.meta.url));
// Run wrangler's entry with this very Node (22, from the `node` devDependency under npm
// scripts), not whatever `node` comes first on the PATH.
const WRANGLER_ENTRY = join(ROOT, "node_modules", "wrangler", "bin", "wrangler.js");
const execFileAsync = promisify(execFile);
const run = (args, options) => execFileAsync(process.execPath, [WRANGLER_ENTRY, ...args], options);

/** Dev-only secrets for the runtime under test (the same kind of values as .dev.vars.example). */
export const SECRETS = {
  STANDARD_WEBHOOK_SECRET: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
  SVIX_WEBHOOK_SECRET: "whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD",
  STRIPE_WEBHOOK_SECRET: "whsec_e2e_stripe_secret",
  GITHUB_WEBHOOK_SECRET: "e2e-github-secret", // one secret, verbatim (a rotation adds GITHUB_WEBHOOK_SECRET_PREVIOUS)
  SHOPIFY_WEBHOOK_SECRET: "e2e-shopify-secret",
  SLACK_WEBHOOK_SECRET: "e2e-slack-signing-secret",
  TWILIO_WEBHOOK_SECRET: "e2e-twilio-auth-token",
  ADMIN_TOKEN: "e2e-admin-token",
  // GITLAB_WEBHOOK_SECRET is left unset on purpose: that source answers 503 source_not_configured.
};

/** A free TCP port on loopback. */
export function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

/**
 * This project's wrangler.toml without the consumer of webhook-deliveries, in a directory of its
 * own: the same worker, whose queue sends nobody consumes. For measuring and loading the receiver
 * alone (locally the consumer shares the runtime's one thread; in production it runs elsewhere).
 */
export function configWithoutConsumer() {
  const toml = readFileSync(join(ROOT, "wrangler.toml"), "utf8");
  const consumer = /\[\[queues\.consumers\]\]\nqueue = "webhook-deliveries"\n[\s\S]*?\n(?=\[)/;
  if (!consumer.test(toml)) throw new Error('wrangler.toml has no [[queues.consumers]] block for "webhook-deliveries"');
  const dir = mkdtempSync(join(tmpdir(), "webhook-inbox-config-"));
  const config = toml
    .replace(consumer, "")
    .replace(/^main = .*$/m, `main = ${JSON.stringify(join(ROOT, "src", "index.ts"))}`)
    .replace(/^migrations_dir = .*$/m, `migrations_dir = ${JSON.stringify(join(ROOT, "migrations"))}`);
  writeFileSync(join(dir, "wrangler.toml"), config);
  return { path: join(dir, "wrangler.toml"), remove: () => rmSync(dir, { recursive: true, force: true }) };
}

/** wrangler.toml's environment whose Hyperdrive binding makes the inbox run on Postgres. */
export const POSTGRES_ENVIRONMENT = "postgres";
/** pg's type ids of int8 (COUNT(*), bigint) and numeric (SUM of a bigint), which it returns as text. */
const INT8_OID = 20;
const NUMERIC_OID = 1700;

/**
 * A local inbox: `start()` applies migrations to its state directory and starts wrangler dev;
 * `kill()` SIGKILLs its process group (state survives); `start()` again restarts on the same state.
 *
 * With `postgres: { url }` it runs wrangler.toml's `postgres` environment, its Hyperdrive binding
 * connected to that database (CLOUDFLARE_HYPERDRIVE_LOCAL_CONNECTION_STRING_HYPERDRIVE), and
 * `sql()` queries that database from Node. The database is the caller's: started, migrated and
 * stopped by it, never touched by `kill()` or `stop()`. The local D1 database is not migrated then:
 * the Postgres store must not need it.
 */
export class LocalInbox {
  /**
   * @param {{ vars?: Record<string, string>, log?: boolean, config?: string, migrate?: boolean, postgres?: { url: string } }} [options]
   * `migrate`: apply the D1 migrations of the config before starting (default: only for the inbox's
   * own config on D1). `postgres.url`: the migrated Postgres database the inbox runs on.
   */
  constructor(options = {}) {
    this.config = options.config;
    this.postgres = options.postgres;
    this.migrate = options.migrate ?? (!options.config && !options.postgres);
    this.stateDir = mkdtempSync(join(tmpdir(), "webhook-inbox-e2e-"));
    // Only secrets by default, like a user's own .dev.vars: nothing may need a setting to work.
    this.vars = { ...SECRETS, ...options.vars };
    this.log = options.log ?? Boolean(process.env.E2E_LOG);
    this.child = null;
    this.output = "";
  }

  get url() {
    return `http://127.0.0.1:${this.port}`;
  }

  async start() {
    if (!this.migrated && this.migrate) {
      const config = this.config ? ["--config", this.config] : [];
      await run(["d1", "migrations", "apply", "webhook-inbox", "--local", "--persist-to", this.stateDir, ...config], {
        cwd: ROOT,
        env: { ...process.env, CI: "true" },
      });
      this.migrated = true;
    }
    this.port = await freePort();
    const inspectorPort = await freePort();
    const args = ["dev", "--port", String(this.port), "--ip", "127.0.0.1", "--inspector-port", String(inspectorPort)];
    args.push("--persist-to", this.stateDir, "--show-interactive-dev-session=false", "--log-level", "warn");
    if (this.config) args.push("--config", this.config);
    if (this.postgres) args.push("--env", POSTGRES_ENVIRONMENT);
    // Our own env file, so a developer's .dev.vars never leaks into the runtime under test.
    const envFile = join(this.stateDir, "e2e.env");
    writeFileSync(envFile, Object.entries(this.vars).map(([name, value]) => `${name}=${value}`).join("\n"));
    args.push("--env-file", envFile);
    // detached: its own process group, so kill() reaches wrangler, workerd and everything between.
    // The dev registry and miniflare's temporary files live in the state directory too. A
    // SIGKILLed session never unregisters: in the shared registry (~/.config/.wrangler) its
    // entry would stay and name a dead port as the consumer of our queues, and another session
    // with this worker's name (a developer's `npm run dev`) would meet ours there.
    const own = { WRANGLER_REGISTRY_PATH: join(this.stateDir, "registry"), TMPDIR: join(this.stateDir, "tmp") };
    mkdirSync(own.TMPDIR, { recursive: true });
    const env = { ...process.env, CI: "true", ...own };
    if (this.postgres) env.CLOUDFLARE_HYPERDRIVE_LOCAL_CONNECTION_STRING_HYPERDRIVE = this.postgres.url;
    this.child = spawn(process.execPath, [WRANGLER_ENTRY, ...args], { cwd: ROOT, detached: true, stdio: ["ignore", "pipe", "pipe"], env });
    const capture = (chunk) => {
      this.output = (this.output + chunk.toString()).slice(-20_000);
      if (this.log) process.stderr.write(chunk);
    };
    this.child.stdout.on("data", capture);
    this.child.stderr.on("data", capture);
    await this.#waitForHealth(90_000);
  }

  async #waitForHealth(timeoutMs) {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      if (this.child.exitCode !== null) throw new Error(`wrangler dev exited early:\n${this.output}`);
      try {
        const response = await fetch(`${this.url}/health`, { signal: AbortSignal.timeout(2_000) });
        if (response.ok) return;
      } catch {
        // not up yet
      }
      await sleep(250);
    }
    throw new Error(`wrangler dev did not become healthy in ${timeoutMs} ms:\n${this.output}`);
  }

  /**
   * SIGKILL the whole process group: no graceful shutdown, as in a crash. Returns once every
   * process of the group is gone (a restart must not meet the old runtime's ports or state
   * files); throws if one is still there after `timeoutMs`.
   */
  async kill(timeoutMs = 30_000) {
    const child = this.child;
    if (!child) return;
    const group = child.pid;
    const exited = child.exitCode !== null || child.signalCode !== null ? Promise.resolve() : new Promise((resolve) => child.once("exit", resolve));
    try {
      process.kill(-group, "SIGKILL");
    } catch {
      // the group is already gone
    }
    const deadline = Date.now() + timeoutMs;
    // unref'd: a wait that lost the race must not hold the test process open.
    await Promise.race([exited, delay(timeoutMs, undefined, { ref: false })]);
    let alive = liveMembers(group);
    while (alive.length > 0 && Date.now() < deadline) {
      await sleep(100);
      alive = liveMembers(group);
    }
    if (alive.length > 0 || (child.exitCode === null && child.signalCode === null)) {
      throw new Error(`wrangler dev's process group ${group} is still alive ${timeoutMs} ms after SIGKILL: ${alive.join(", ") || `pid ${group}`}`);
    }
    this.child = null;
  }

  /** Kill and remove the state directory. */
  async stop() {
    await this.kill();
    rmSync(this.stateDir, { recursive: true, force: true });
  }

  /**
   * Runs SQL against the inbox's database and returns its rows: the local D1 database (works while
   * wrangler dev runs), or with `postgres` the Postgres database, from Node with `pg`, `params`
   * bound as $1, $2, …; there COUNT(*) and SUM come back as numbers, as from D1.
   */
  async sql(command, params = []) {
    if (this.postgres) return postgresQuery(this.postgres.url, command, params);
    // wrangler d1 execute opens the runtime's SQLite file beside it: while the runtime writes, the
    // read can meet SQLITE_BUSY. It is read again (a reader's lock, not a fault of the inbox).
    for (let tries = 1; ; tries++) {
      try {
        const { stdout } = await run(
          ["d1", "execute", "webhook-inbox", "--local", "--persist-to", this.stateDir, "--json", "--command", command],
          { cwd: ROOT, env: { ...process.env, CI: "true" }, maxBuffer: 64 * 1024 * 1024 },
        );
        return JSON.parse(stdout)[0].results;
      } catch (error) {
        // wrangler reports it in its JSON on stdout, or in the error's message.
        if (tries >= 20 || !`${error?.message}${error?.stdout ?? ""}`.includes("SQLITE_BUSY")) throw error;
        await new Promise((resolve) => setTimeout(resolve, 250));
      }
    }
  }

  /** POSTs to the inbox; `signal` may abort it (a provider's request timeout). */
  async post(path, body, headers = {}, { signal } = {}) {
    const response = await fetch(`${this.url}${path}`, { method: "POST", body, headers, signal });
    const text = await response.text();
    let json = null;
    try {
      json = JSON.parse(text);
    } catch {
      // not JSON
    }
    return { status: response.status, json, text };
  }

  /** GETs an admin route with the admin token. */
  async admin(path, init = {}) {
    const response = await fetch(`${this.url}${path}`, {
      ...init,
      headers: { authorization: `Bearer ${this.vars.ADMIN_TOKEN}`, ...(init.headers ?? {}) },
    });
    return { status: response.status, json: await response.json().catch(() => null) };
  }
}

/**
 * One query on a connection of its own, int8 and numeric read as numbers (exact up to 2^53, which
 * the counts and sums of a test stay far below).
 */
async function postgresQuery(url, command, params) {
  const client = new pg.Client({
    connectionString: url,
    types: { getTypeParser: (oid, format) => (oid === INT8_OID || oid === NUMERIC_OID ? Number : pg.types.getTypeParser(oid, format)) },
  });
  await client.connect();
  try {
    return (await client.query(command, params)).rows;
  } finally {
    await client.end();
  }
}

/**
 * The processes of group `group` that still run ("pid comm"). Zombies do not count: they hold no
 * port or file, and killed grandchildren, reparented to a PID 1 that may never reap them, stay
 * zombies for good.
 */
function liveMembers(group) {
  const alive = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    let stat;
    try {
      stat = readFileSync(`/proc/${entry}/stat`, "utf8");
    } catch {
      continue; // exited meanwhile
    }
    // pid (comm) state ppid pgrp …; comm may hold spaces and parentheses, so split after the last ")".
    const close = stat.lastIndexOf(")");
    const [state, , pgrp] = stat.slice(close + 2).split(" ");
    if (Number(pgrp) === group && state !== "Z" && state !== "X") alive.push(`${entry} ${stat.slice(stat.indexOf("(") + 1, close)}`);
  }
  return alive;
}

export function sleep(ms) {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Polls `check` until it returns a truthy value or `timeoutMs` passes; returns the last value. */
export async function waitFor(check, { timeoutMs = 120_000, intervalMs = 1_000 } = {}) {
  const deadline = Date.now() + timeoutMs;
  let value;
  while (Date.now() < deadline) {
    value = await check();
    if (value) return value;
    await sleep(intervalMs);
  }
  return value;
}

/** Runs `fn` over `items` with at most `limit` at once. */
export async function mapLimit(items, limit, fn) {
  const results = new Array(items.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, items.length) }, async () => {
      while (next < items.length) {
        const index = next++;
        results[index] = await fn(items[index], index);
      }
    }),
  );
  return results;
}
