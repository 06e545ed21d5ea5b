// Black-box on Postgres: the real local runtime as wrangler.toml's `postgres` environment, its
// Hyperdrive binding connected to a private Postgres server started here (src/cli/lib/local-postgres.mjs,
// durable: a SIGKILL of the runtime is a crash of the client, never of the database) and migrated
// with migrations-postgres. The rows are read in Postgres itself, from Node.
//
// - 300 Stripe events, each sent one to three times at once, and a few broken ones: every send
//   answered 200, one row each, 300 payments and 300 done, the broken ones failed at once;
// - the admin API and the dashboard on those rows: counts, one delivery with its body, a replay
//   of a failed one (nothing fixed: it fails again, its attempt history grows);
// - kill and restart under load, as test/e2e/restart.test.mjs on D1: every delivery answered 200
//   before the kill is done exactly once within the same recovery limit.
//
// Each part has a database of its own on the one server. Without Postgres on the machine this is
// skipped, naming what to install, except on CI (CI=true), where it fails
// (test/helpers/postgres-available.mjs); a server that is installed but cannot start fails it too.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { inflateRawSync } from "node:zlib";
import pg from "pg";
import { startLocalPostgres } from "../../src/cli/lib/local-postgres.mjs";
import { applyPostgresMigrations, POSTGRES_MIGRATIONS_DIR } from "../../src/cli/lib/postgres-migrations.mjs";
import { skipWithoutPostgres as skip } from "../helpers/postgres-available.mjs";
import { LocalInbox, mapLimit, ROOT, waitFor } from "./harness.mjs";
import { killUnderLoadAndRestart } from "./kill-restart.mjs";
import { paymentEvent, stripeDelivery } from "./signers.mjs";

const EVENTS = 300;
const BROKEN = 5;

/** The private server all parts share, started by the first that needs it. */
let server;
let serverDir;

after(async () => {
  await server?.stop();
  if (serverDir) rmSync(serverDir, { recursive: true, force: true });
});

/** A database of its own on the server, migrated; returns its URL. */
async function migratedDatabase(name) {
  if (!server) {
    serverDir = mkdtempSync(join(tmpdir(), "webhook-inbox-e2e-postgres-"));
    // Durable (fsync on), as a real database is: the runtime is killed here, never the server.
    server = await startLocalPostgres({ dir: serverDir, durable: true });
  }
  const admin = new pg.Client({ connectionString: server.url });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${admin.escapeIdentifier(name)}`);
  } finally {
    await admin.end();
  }
  const url = new URL(server.url);
  url.pathname = `/${name}`;
  await applyPostgresMigrations({ databaseUrl: url.toString(), dir: join(ROOT, POSTGRES_MIGRATIONS_DIR) });
  return url.toString();
}

/** Counts by status in Postgres, e.g. { done: 300, failed: 5 }. */
async function statusCounts(inbox) {
  const rows = await inbox.sql("SELECT status, count(*) AS n FROM deliveries GROUP BY status ORDER BY status");
  return Object.fromEntries(rows.map((row) => [row.status, row.n]));
}

describe("processing on Postgres, with the admin API and the dashboard", { skip, timeout: 420_000 }, () => {
  /** @type {LocalInbox} */
  let inbox;
  const good = Array.from({ length: EVENTS }, (_, index) => stripeDelivery(paymentEvent(`evt_pg_${index}`, 100 + index)));
  const broken = Array.from({ length: BROKEN }, (_, index) => stripeDelivery(paymentEvent(`evt_pg_broken_${index}`, undefined)));

  before(async () => {
    inbox = new LocalInbox({ postgres: { url: await migratedDatabase("inbox_processing") } });
    await inbox.start();
  });
  after(() => inbox?.stop());

  it("records exactly 300 payments for 300 events each sent one to three times at once, broken ones failed at once", async () => {
    const copies = (index) => 1 + (index % 3);
    const groups = [...good, ...broken].map((delivery, index) => Array.from({ length: copies(index) }, () => delivery));
    groups.sort(() => Math.random() - 0.5);
    const sent = (await mapLimit(groups, 16, (group) => Promise.all(group.map((delivery) => send(delivery))))).flat();
    const sends = sent.length;
    assert.deepEqual(
      sent.filter((each) => each.status !== 200).map((each) => `${each.status} ${each.text}`),
      [],
      "every send is answered 200",
    );
    const stored = (prefix) => sent.filter((each) => each.json.status === "stored" && each.id.startsWith(prefix)).length;
    assert.equal(stored("evt_pg_broken_"), BROKEN);
    assert.equal(stored("evt_pg_") - BROKEN, EVENTS, "one stored per event, the other copies duplicate");
    assert.equal(sent.filter((each) => each.json.status === "duplicate").length, sends - EVENTS - BROKEN);

    const settled = await waitFor(async () => {
      const counts = await statusCounts(inbox);
      return counts.done === EVENTS && counts.failed === BROKEN ? counts : null;
    });
    assert.deepEqual(settled, { done: EVENTS, failed: BROKEN });
    const [payments] = await inbox.sql("SELECT count(*) AS n, count(DISTINCT delivery_id) AS distinct_ids, sum(amount) AS total FROM payments");
    assert.deepEqual(payments, { n: EVENTS, distinct_ids: EVENTS, total: EVENTS * 100 + ((EVENTS - 1) * EVENTS) / 2 });
    const [paidDone] = await inbox.sql(
      "SELECT count(*) AS n FROM payments p JOIN deliveries d ON d.source = 'stripe' AND d.id = p.delivery_id WHERE d.status = 'done' AND d.attempts = 1",
    );
    assert.equal(paidDone.n, EVENTS, "each payment belongs to a delivery done on its first run");
    const failed = await inbox.sql("SELECT id, attempts, error FROM deliveries WHERE status = 'failed' ORDER BY id");
    assert.deepEqual(
      failed.map((row) => row.id),
      broken.map((_, index) => `evt_pg_broken_${index}`),
    );
    for (const row of failed) {
      assert.equal(row.attempts, 1, "a PermanentError is not retried");
      assert.match(row.error, /data\.object\.amount/, "the error names the missing field");
    }
    console.log(`sends: ${sends}, stored: ${EVENTS + BROKEN} (${EVENTS} good, ${BROKEN} broken), payments rows: ${payments.n}, done: ${settled.done}, failed: ${settled.failed}`);
  });

  it("answers /admin/stats with the counts in Postgres", async () => {
    const { status, json } = await inbox.admin("/admin/stats");
    assert.equal(status, 200);
    const inPostgres = await statusCounts(inbox);
    const expected = { received: 0, processing: 0, done: EVENTS, failed: BROKEN };
    assert.deepEqual({ received: 0, processing: 0, ...inPostgres }, expected);
    // The API counts filtered deliveries apart (stored as done without `handled`): none here.
    const api = { ...expected, filtered: 0 };
    assert.deepEqual(json, { counts: api, unhandled: 0, oldestWaitingSeconds: null, bySource: { stripe: api } });
  });

  it("returns a delivery with its body, headers and attempt history from GET /admin/deliveries/stripe/<id>", async () => {
    const delivery = good[7];
    const { status, json } = await inbox.admin("/admin/deliveries/stripe/evt_pg_7");
    assert.equal(status, 200);
    assert.equal(json.id, "evt_pg_7");
    assert.equal(json.status, "done");
    assert.equal(json.attempts, 1);
    assert.equal(json.handled, true);
    assert.equal(json.eventType, "payment_intent.succeeded");
    assert.equal(json.body.text, delivery.body, "the body, byte for byte");
    assert.equal(Buffer.from(json.body.base64, "base64").toString("utf8"), delivery.body);
    assert.equal(json.body.bytes, Buffer.byteLength(delivery.body));
    assert.deepEqual(
      json.headers.find(([name]) => name === "stripe-signature"),
      ["stripe-signature", delivery.headers["stripe-signature"]],
    );
    assert.deepEqual(
      json.attemptLog.map((entry) => [entry.attempt, entry.outcome]),
      [[1, "done"]],
    );
    // Stored compressed when that is smaller (src/store/body-encoding.ts): inflated here with Node's zlib.
    const [row] = await inbox.sql("SELECT body, body_encoding FROM deliveries WHERE source = 'stripe' AND id = $1", ["evt_pg_7"]);
    const stored = row.body_encoding === "deflate-raw" ? inflateRawSync(row.body) : row.body;
    assert.equal(stored.toString("utf8"), delivery.body, "stored as the bytes sent");
    assert.equal((await inbox.admin("/admin/deliveries/stripe/evt_pg_missing")).status, 404);

    const list = await inbox.admin("/admin/deliveries?status=failed&limit=50");
    assert.equal(list.status, 200);
    assert.deepEqual(list.json.deliveries.map((each) => each.id).sort(), broken.map((_, index) => `evt_pg_broken_${index}`));
  });

  it("replays a failed delivery through the admin API: nothing fixed, it fails again and its history grows", async () => {
    const id = "evt_pg_broken_0";
    // Its dead letter lands a few seconds after it failed; let it, before the replay.
    assert.ok(await waitFor(() => inbox.output.includes(`dead letter: stripe/${id}`), { timeoutMs: 30_000, intervalMs: 250 }), "the dead letter is logged");
    const replay = await inbox.admin(`/admin/deliveries/stripe/${id}/replay`, { method: "POST" });
    assert.equal(replay.status, 202, JSON.stringify(replay.json));
    assert.deepEqual(replay.json, { status: "replayed", source: "stripe", id });
    const history = await failedAgain(id);
    assert.deepEqual(history, [
      [1, "failed"],
      [null, "replayed"],
      [1, "failed"],
    ]);
    const [row] = await inbox.sql("SELECT status, attempts, error, jsonb_array_length(attempt_log) AS entries FROM deliveries WHERE source = 'stripe' AND id = $1", [id]);
    assert.equal(row.status, "failed");
    assert.equal(row.attempts, 1, "a replay starts again from attempt 1");
    assert.match(row.error, /data\.object\.amount/);
    assert.equal(row.entries, 3);
    const [payments] = await inbox.sql("SELECT count(*) AS n FROM payments");
    assert.equal(payments.n, EVENTS, "the replay wrote no payment");
  });

  it("serves the dashboard from Postgres: overview counts, the failed list, a delivery, and a replay from its page", async () => {
    const dashboard = await signIn(inbox);
    // The overview's counts are a snapshot the sweeper refreshes (at most a minute old): reload until they match.
    const expected = { received: 0, processing: 0, done: EVENTS, failed: BROKEN };
    let shown;
    const overview = await waitFor(
      async () => {
        const { status, text } = await dashboard.get("/ui");
        assert.equal(status, 200);
        shown = Object.fromEntries(Object.keys(expected).map((state) => [state, Number(new RegExp(`aria-label="(\\d+) ${state} deliveries"`).exec(text)?.[1])]));
        return JSON.stringify(shown) === JSON.stringify(expected) ? text : null;
      },
      { timeoutMs: 120_000, intervalMs: 5_000 },
    );
    assert.ok(overview, `the overview shows ${JSON.stringify(shown)}, not ${JSON.stringify(expected)}`);
    assert.match(overview, /<h1>Overview<\/h1>/);

    const failedList = await dashboard.get("/ui/deliveries?status=failed");
    assert.equal(failedList.status, 200);
    for (let index = 0; index < BROKEN; index++) assert.ok(failedList.text.includes(`evt_pg_broken_${index}`), `the failed list names evt_pg_broken_${index}`);
    assert.ok(!/evt_pg_\d/.test(failedList.text), "and no done delivery");

    const id = "evt_pg_broken_1";
    const page = await dashboard.get(`/ui/deliveries/stripe/${id}`);
    assert.equal(page.status, 200);
    assert.match(page.text, /PermanentError: payment_intent\.succeeded has no integer data\.object\.amount/);
    assert.ok(page.text.includes(`&quot;id&quot;: &quot;${id}&quot;`) || page.text.includes(`"id": "${id}"`), "its body is shown");

    assert.ok(await waitFor(() => inbox.output.includes(`dead letter: stripe/${id}`), { timeoutMs: 30_000, intervalMs: 250 }), "the dead letter is logged");
    const replay = await dashboard.post(`/ui/deliveries/stripe/${id}/replay`);
    assert.equal(replay.status, 303);
    assert.match(replay.location, new RegExp(`/ui/deliveries/stripe/${id}\\?notice=replayed$`));
    assert.deepEqual(await failedAgain(id), [
      [1, "failed"],
      [null, "replayed"],
      [1, "failed"],
    ]);
    const after = await dashboard.get(`/ui/deliveries/stripe/${id}`);
    assert.equal((after.text.match(/>replayed</g) ?? []).length, 1, "the page shows the replay in its history");
  });

  /** Sends one delivery; the result carries its event id. */
  async function send(delivery) {
    return { ...(await inbox.post(delivery.path, delivery.body, delivery.headers)), id: JSON.parse(delivery.body).id };
  }

  /** Waits until a replayed delivery has failed again; returns its attempt history as [attempt, outcome]. */
  async function failedAgain(id) {
    const detail = await waitFor(
      async () => {
        const { json } = await inbox.admin(`/admin/deliveries/stripe/${id}`);
        return json?.status === "failed" && json.attemptLog.length >= 3 ? json : null;
      },
      { timeoutMs: 60_000, intervalMs: 500 },
    );
    assert.ok(detail, `${id} failed again after its replay`);
    return detail.attemptLog.map((entry) => [entry.attempt, entry.outcome]);
  }
});

describe("kill and restart on Postgres", { skip, timeout: 420_000 }, () => {
  /** @type {LocalInbox} */
  let inbox;
  after(() => inbox?.stop());

  it("processes every delivery answered 200 before a SIGKILL exactly once after a restart on the same Postgres", async () => {
    inbox = new LocalInbox({ postgres: { url: await migratedDatabase("inbox_restart") } });
    await inbox.start();
    const answeredBeforeKill = await killUnderLoadAndRestart(inbox, {
      prefix: "evt_pg_restart_",
      doneCount: async (ids) => (await inbox.sql("SELECT count(*) AS n FROM deliveries WHERE status = 'done' AND id = ANY($1)", [ids]))[0].n,
    });

    const [payments] = await inbox.sql("SELECT count(*) AS n, count(DISTINCT delivery_id) AS distinct_ids FROM payments WHERE delivery_id = ANY($1)", [answeredBeforeKill]);
    assert.deepEqual(payments, { n: answeredBeforeKill.length, distinct_ids: answeredBeforeKill.length });
    const [leftovers] = await inbox.sql("SELECT count(*) AS n FROM deliveries WHERE status IN ('received', 'processing', 'failed')");
    assert.equal(leftovers.n, 0, "nothing stored is left behind, including requests cut off by the kill");
    const [unpaid] = await inbox.sql("SELECT count(*) AS n FROM deliveries d WHERE NOT EXISTS (SELECT 1 FROM payments p WHERE p.delivery_id = d.id)");
    assert.equal(unpaid.n, 0, "every stored delivery, answered or cut off, has its one payment");
  });
});

/**
 * A signed-in dashboard session, as a browser holds it: the session cookie from POST /ui/login
 * (a form from the dashboard's own origin), sent with every request.
 */
async function signIn(inbox) {
  const origin = inbox.url;
  const login = await fetch(`${origin}/ui/login`, {
    method: "POST",
    redirect: "manual",
    headers: { "content-type": "application/x-www-form-urlencoded", origin },
    body: new URLSearchParams({ token: inbox.vars.ADMIN_TOKEN, next: "/ui" }).toString(),
  });
  assert.equal(login.status, 303, "signed in");
  const cookie = login.headers
    .getSetCookie()
    .map((line) => line.split(";")[0])
    .join("; ");
  assert.ok(cookie, "a session cookie");
  return {
    async get(path) {
      const response = await fetch(`${origin}${path}`, { redirect: "manual", headers: { cookie } });
      return { status: response.status, text: await response.text() };
    },
    async post(path, form = {}) {
      const response = await fetch(`${origin}${path}`, {
        method: "POST",
        redirect: "manual",
        headers: { cookie, origin, "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams(form).toString(),
      });
      return { status: response.status, location: response.headers.get("location") ?? "" };
    },
  };
}
