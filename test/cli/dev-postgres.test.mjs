// `npm run dev:postgres` (src/cli/dev-postgres.mjs), the real thing from a copy of the checkout:
// its own Postgres server started and migrated, the inbox answering on the postgres environment,
// and the server stopped with the command. Skipped without Postgres on the machine, except on CI
// (CI=true), where that fails.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { chmodSync, cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import pg from "pg";
import { skipWithoutPostgres } from "../helpers/postgres-available.mjs";
import { freePort } from "../e2e/harness.mjs";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
/** How long one `npm run dev:postgres` may take to answer /health (initdb, migrations, bundling, workerd). */
const START_TIMEOUT_MS = 120_000;

const skip = skipWithoutPostgres;
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

describe("npm run dev:postgres, for real", { skip, timeout: START_TIMEOUT_MS + 60_000 }, () => {
  /** A checkout-like copy: the committed files wrangler needs, node_modules linked, no .dev.vars. */
  let checkout = "";
  let base = "";
  let state = "";
  before(() => {
    checkout = mkdtempSync(join(tmpdir(), "webhook-inbox-dev-pg-"));
    for (const entry of ["src", "migrations", "migrations-postgres", "wrangler.toml", "package.json", "tsconfig.json", ".dev.vars.example"]) {
      if (existsSync(join(ROOT, entry))) cpSync(join(ROOT, entry), join(checkout, entry), { recursive: true });
    }
    symlinkSync(join(ROOT, "node_modules"), join(checkout, "node_modules"), "dir");
    // Open as a checkout's .wrangler is (mkdtemp makes 0700): as root, the server runs as another user.
    base = mkdtempSync(join(tmpdir(), "webhook-inbox-dev-pg-state-"));
    chmodSync(base, 0o755);
    state = join(base, "state");
    mkdirSync(join(state, "tmp"), { recursive: true });
  });
  after(() => {
    rmSync(checkout, { recursive: true, force: true });
    rmSync(base, { recursive: true, force: true });
  });

  it("starts and migrates its own Postgres, serves the inbox on it, and stops the server when stopped", async () => {
    const [port, inspectorPort] = [await freePort(), await freePort()];
    const args = ["--port", String(port), "--ip", "127.0.0.1", "--inspector-port", String(inspectorPort)];
    args.push("--persist-to", state, "--show-interactive-dev-session=false", "--log-level", "warn");
    const env = { ...process.env, CI: "true", WRANGLER_REGISTRY_PATH: join(state, "registry"), TMPDIR: join(state, "tmp"), WRANGLER_SEND_METRICS: "false" };
    delete env.DATABASE_URL;
    const child = spawn(process.execPath, [join(checkout, "src", "cli", "dev-postgres.mjs"), ...args], { cwd: checkout, detached: true, stdio: ["ignore", "pipe", "pipe"], env });
    const output = { out: "", err: "" };
    child.stdout.on("data", (chunk) => (output.out += chunk));
    child.stderr.on("data", (chunk) => (output.err += chunk));
    const exited = new Promise((resolve) => child.once("exit", resolve));
    let databaseUrl = "";
    try {
      const deadline = Date.now() + START_TIMEOUT_MS;
      for (;;) {
        assert.equal(child.exitCode, null, `npm run dev:postgres exited early:\n${output.out}\n${output.err}`);
        const ok = await fetch(`http://127.0.0.1:${port}/health`, { signal: AbortSignal.timeout(2_000) }).then((response) => response.status === 200, () => false);
        if (ok) break;
        assert.ok(Date.now() < deadline, `no 200 from /health within ${START_TIMEOUT_MS} ms:\n${output.out}\n${output.err}`);
        await sleep(250);
      }
      const serverPort = /Postgres: local server \d+ in .*, at postgres:\/\/postgres:\*\*\*@127\.0\.0\.1:(\d+)\/webhook_inbox/.exec(output.out)?.[1];
      assert.ok(serverPort, `no local server announced:\n${output.out}`);
      assert.match(output.out, /Postgres: applied 0001_/);
      const password = readFileSync(join(state, "postgres", "password"), "utf8").trim();
      databaseUrl = `postgres://postgres:${password}@127.0.0.1:${serverPort}/webhook_inbox`;
      const client = new pg.Client({ connectionString: databaseUrl });
      await client.connect();
      const { rows } = await client.query("SELECT count(*)::int AS applied FROM inbox_migrations");
      await client.end();
      assert.ok(rows[0].applied > 0);

      child.kill("SIGTERM");
      await Promise.race([exited, sleep(30_000).then(() => assert.fail(`dev:postgres still running 30 s after SIGTERM:\n${output.err}`))]);
      const after = new pg.Client({ connectionString: databaseUrl, connectionTimeoutMillis: 2_000 });
      await assert.rejects(after.connect(), "the Postgres server is stopped with the command");
    } finally {
      try {
        process.kill(-child.pid, "SIGKILL");
      } catch {
        // already gone
      }
      await exited;
    }
  });
});
