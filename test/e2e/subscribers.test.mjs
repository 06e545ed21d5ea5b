// Two subscribers of one source through the real local runtime, killed under load: Stripe payments
// go to the code handler (the example's payments row) and, by vars alone (STRIPE_FORWARD_URL,
// _SECRET), to a real HTTP backend started here, which verifies every request with the
// standardwebhooks library and answers each delivery's first call 503. The runtime is SIGKILLed
// mid-load and restarted on the same state (kill-restart.mjs), on D1 and on Postgres. Every
// delivery answered 200 before the kill must end done in both subscribers: one payment each (the
// forward's retries never re-run the handler), and taken by the backend (on its webhook-id: a run
// killed between the backend's 2xx and its commit sends it again, which the backend deduplicates).
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import pg from "pg";
import { Webhook } from "standardwebhooks";
import { startLocalPostgres } from "../../src/cli/lib/local-postgres.mjs";
import { applyPostgresMigrations, POSTGRES_MIGRATIONS_DIR } from "../../src/cli/lib/postgres-migrations.mjs";
import { skipWithoutPostgres } from "../helpers/postgres-available.mjs";
import { LocalInbox, ROOT } from "./harness.mjs";
import { killUnderLoadAndRestart, RECOVERY_LIMIT_S } from "./kill-restart.mjs";

const FORWARD_SECRET = "whsec_c3Vic2NyaWJlcnMtZTJlLXNlY3JldC0zMi1ieXRlcyE=";

/** The backend: 503 on a delivery's first call, then 200; a webhook-id's effect applied once. */
async function startBackend() {
  const verifier = new Webhook(FORWARD_SECRET);
  const state = { calls: new Map(), taken: new Map(), unverified: 0 };
  const server = createServer((request, response) => {
    const chunks = [];
    request.on("data", (chunk) => chunks.push(chunk));
    request.on("end", () => {
      const body = Buffer.concat(chunks).toString("utf8");
      try {
        verifier.verify(body, request.headers);
      } catch {
        state.unverified++;
        response.writeHead(401).end();
        return;
      }
      const id = String(request.headers["webhook-inbox-delivery-id"]);
      const call = (state.calls.get(id) ?? 0) + 1;
      state.calls.set(id, call);
      if (call === 1) {
        response.writeHead(503).end("warming up");
        return;
      }
      const webhookId = String(request.headers["webhook-id"]);
      state.taken.set(webhookId, (state.taken.get(webhookId) ?? 0) + 1);
      response.writeHead(200).end("ok");
    });
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { state, port: server.address().port, stop: () => new Promise((resolve) => server.close(resolve)) };
}

/**
 * The destination's vars. Its breaker is set past what this backend does (every delivery's first
 * call fails, so every probe would fail too): the breaker has its own drill (breaker.test.mjs);
 * this one is about two subscribers' progress through a kill.
 */
const forwardVars = (backend) => ({
  STRIPE_FORWARD_URL: `http://127.0.0.1:${backend.port}/webhooks/stripe`,
  STRIPE_FORWARD_SECRET: FORWARD_SECRET,
  STRIPE_FORWARD_BREAKER_FAILURES: "1000",
});

/**
 * The drill on `inbox` (started by it), the store read through `count(sql, ids)`, which counts rows
 * of the query over the ids (D1 gets them inlined, Postgres as $1).
 */
async function drill(inbox, backend, prefix, count) {
  await inbox.start();
  const answered = await killUnderLoadAndRestart(inbox, {
    prefix,
    total: 120,
    // Twice the runs of the one-subscriber drill, each forward retried once after its 503, and the
    // runs a kill leaves held come back when their leases run out (60 s): what is asserted here is
    // exactly once; the time is printed, bounded at twice the one-subscriber limit.
    recoveryLimitS: 2 * RECOVERY_LIMIT_S,
    doneCount: (ids) => count("SELECT COUNT(*) AS n FROM deliveries WHERE status = 'done' AND id IN (:ids)", ids),
  });
  assert.equal(await count("SELECT COUNT(*) AS n FROM payments WHERE delivery_id IN (:ids)", answered), answered.length, "one payment per delivery");
  assert.equal(await count("SELECT COUNT(DISTINCT delivery_id) AS n FROM payments WHERE delivery_id IN (:ids)", answered), answered.length);
  assert.equal(await count("SELECT COUNT(*) AS n FROM deliveries WHERE fanout = 2 AND id IN (:ids)", answered), answered.length, "each fanned out to both");
  assert.equal(await count("SELECT COUNT(*) AS n FROM subscriber_runs WHERE status = 'done' AND id IN (:ids)", answered), 2 * answered.length);
  assert.equal(backend.state.unverified, 0, "every forwarded request was signed");
  for (const id of answered) assert.ok((backend.state.calls.get(id) ?? 0) >= 2, `${id} reached the backend after its 503`);
  assert.ok(backend.state.taken.size >= answered.length, "the backend took every delivery");
  assert.equal(await count("SELECT COUNT(*) AS n FROM subscriber_runs WHERE status <> 'done' AND id IN (:ids)", answered), 0, "no run is left unsettled");
}

describe("two subscribers (a code handler and a forward), killed under load, on D1", { timeout: 420_000 }, () => {
  let inbox;
  let backend;
  after(async () => {
    await inbox?.stop();
    await backend?.stop();
  });

  it("ends every delivery answered 200 done in both: one payment each, each taken by the backend", async () => {
    backend = await startBackend();
    inbox = new LocalInbox({ vars: forwardVars(backend) });
    // D1 through wrangler d1 execute binds no parameters: the ids are quoted inline.
    const count = async (sql, ids) => (await inbox.sql(sql.replace(":ids", ids.map((id) => `'${id}'`).join(","))))[0].n;
    await drill(inbox, backend, "evt_subs_d1_", count);
  });
});

describe("two subscribers (a code handler and a forward), killed under load, on Postgres", { skip: skipWithoutPostgres, timeout: 420_000 }, () => {
  let inbox;
  let backend;
  let server;
  let serverDir;
  after(async () => {
    await inbox?.stop();
    await backend?.stop();
    await server?.stop();
    if (serverDir) rmSync(serverDir, { recursive: true, force: true });
  });

  it("ends every delivery answered 200 done in both: one payment each, each taken by the backend", async () => {
    serverDir = mkdtempSync(join(tmpdir(), "webhook-inbox-e2e-subscribers-"));
    server = await startLocalPostgres({ dir: serverDir, durable: true });
    const admin = new pg.Client({ connectionString: server.url });
    await admin.connect();
    await admin.query("CREATE DATABASE inbox_subscribers").finally(() => admin.end());
    const url = new URL(server.url);
    url.pathname = "/inbox_subscribers";
    await applyPostgresMigrations({ databaseUrl: url.toString(), dir: join(ROOT, POSTGRES_MIGRATIONS_DIR) });

    backend = await startBackend();
    inbox = new LocalInbox({
      postgres: { url: url.toString() },
      vars: forwardVars(backend),
    });
    const count = async (sql, ids) => Number((await inbox.sql(sql.replace("IN (:ids)", "= ANY($1)"), [ids]))[0].n);
    await drill(inbox, backend, "evt_subs_pg_", count);
  });
});
