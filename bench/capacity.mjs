#!/usr/bin/env node
/**
 * The capacity side of `npm run bench`: bytes stored per delivery in the real local D1, on realistic
 * payloads, and from that the deliveries per month that fit one D1 database under the default
 * retention. Run alone with `node bench/capacity.mjs` (Node 22: node:sqlite reads the database).
 *
 * Two sets, each sent signed through the real receiver of an inbox of its own (consumer running)
 * until every delivery is done:
 * - GitHub: every example of @octokit/webhooks-examples (api.github.com), as GitHub sends them
 *   (compact JSON, its X-GitHub-* headers);
 * - Stripe: bench/stripe-events.mjs, built from the event shapes Stripe documents, pretty-printed
 *   with two spaces as Stripe sends them.
 * Then the runtime is stopped and a copy of its D1 file is read with SQLite's dbstat: the pages of
 * the deliveries table and of each of its indexes (every page counted whole, free space included),
 * less one page for each (the empty table's root), over the rows stored. Twice: as stored (a
 * delivery's first BODY_RETENTION_DAYS), and after retention cleared the bodies and headers of the
 * done rows with the sweeper's statement (store/d1/sweep.ts `clearBodies`; its other days up to
 * RETENTION_DAYS). Deliveries per month: 30 days of arrivals at the rate that fills D1's 10 GB
 * (10^10 bytes) at steady state, each delivery holding its bytes with body for BODY_RETENTION_DAYS
 * and without for the rest of RETENTION_DAYS.
 */
import { createHmac, randomUUID } from "node:crypto";
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { cpuPerUnit, round, runtimeCpuMs } from "./runtime-cpu.mjs";
import { stripeEvents } from "./stripe-events.mjs";

const { LocalInbox, ROOT, SECRETS, waitFor } = await import("../test/e2e/harness.mjs");

/** D1's limit per database: 10 GB, which cannot be raised (decimal gigabytes, the smaller reading). */
export const D1_LIMIT_BYTES = 10 * 1000 ** 3;
const MONTH_DAYS = 30;
const STRIPE_EVENTS = Number(process.env.BENCH_CAPACITY_STRIPE ?? 600);
const CONCURRENCY = 8;

/** RETENTION_DAYS and BODY_RETENTION_DAYS as wrangler.toml sets them (the defaults of src/config). */
function defaultRetention() {
  const toml = readFileSync(join(ROOT, "wrangler.toml"), "utf8");
  const value = (name) => Number(new RegExp(`^${name} = "(\\d+)"`, "m").exec(toml)?.[1]);
  const retention = { rowsDays: value("RETENTION_DAYS"), bodiesDays: value("BODY_RETENTION_DAYS") };
  if (!(retention.rowsDays > 0 && retention.bodiesDays >= 0)) throw new Error("wrangler.toml sets no RETENTION_DAYS or BODY_RETENTION_DAYS");
  return retention;
}

/** Every api.github.com example as a signed GitHub delivery, with the headers GitHub sends. */
async function githubDeliveries() {
  const examples = createRequire(import.meta.url)("@octokit/webhooks-examples");
  return examples.flatMap((event) =>
    event.examples.map((payload) => {
      const body = JSON.stringify(payload);
      const delivery = randomUUID();
      return {
        path: "/webhooks/github",
        body,
        headers: {
          "content-type": "application/json",
          "user-agent": "GitHub-Hookshot/a1b2c3d",
          accept: "*/*",
          "x-github-delivery": delivery,
          "x-github-event": event.name,
          "x-github-hook-id": "482913377",
          "x-github-hook-installation-target-id": "79929171",
          "x-github-hook-installation-target-type": "repository",
          "x-hub-signature": `sha1=${createHmac("sha1", SECRETS.GITHUB_WEBHOOK_SECRET).update(body).digest("hex")}`,
          "x-hub-signature-256": `sha256=${createHmac("sha256", SECRETS.GITHUB_WEBHOOK_SECRET).update(body).digest("hex")}`,
        },
      };
    }),
  );
}

/** The Stripe set, pretty-printed as Stripe sends its events, signed by Stripe's scheme. */
function stripeDeliveries() {
  return stripeEvents(STRIPE_EVENTS).map((event) => {
    const body = JSON.stringify(event, null, 2);
    const t = Math.floor(Date.now() / 1000);
    const v1 = createHmac("sha256", SECRETS.STRIPE_WEBHOOK_SECRET).update(`${t}.${body}`).digest("hex");
    return {
      path: "/webhooks/stripe",
      body,
      headers: { "content-type": "application/json; charset=utf-8", "user-agent": "Stripe/1.0 (+https://stripe.com/docs/webhooks)", "cache-control": "no-cache", accept: "*/*; q=0.5, application/xml", "stripe-signature": `t=${t},v1=${v1}` },
    };
  });
}

/** Sends `deliveries` at CONCURRENCY; returns the body bytes of those stored (a duplicate stores nothing). */
async function sendAll(inbox, deliveries) {
  let next = 0;
  let stored = 0;
  let receivedBytes = 0;
  const failures = [];
  const worker = async () => {
    while (next < deliveries.length) {
      const delivery = deliveries[next++];
      const reply = await inbox.post(delivery.path, delivery.body, delivery.headers);
      if (reply.status !== 200) failures.push(`${reply.status} ${reply.text.slice(0, 120)}`);
      else if (reply.json?.status === "stored") {
        stored++;
        receivedBytes += Buffer.byteLength(delivery.body);
      }
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  if (failures.length > 0) throw new Error(`${failures.length} deliveries refused, first: ${failures[0]}`);
  return { stored, receivedBytes };
}

/** The D1 database file of a local state directory (the one that holds `deliveries`). */
function d1File(stateDir, DatabaseSync) {
  const dir = join(stateDir, "v3", "d1", "miniflare-D1DatabaseObject");
  for (const name of readdirSync(dir).filter((each) => each.endsWith(".sqlite") && each !== "metadata.sqlite")) {
    const db = new DatabaseSync(join(dir, name), { readOnly: true });
    const found = db.prepare("SELECT 1 FROM sqlite_schema WHERE name = 'deliveries'").get();
    db.close();
    if (found) return { dir, name };
  }
  throw new Error(`no D1 database with a deliveries table in ${dir}`);
}

/** Bytes of the deliveries table and each of its indexes, by name, less each one's root page. */
function deliveriesBytes(db) {
  const pageSize = db.prepare("PRAGMA page_size").get().page_size;
  const rows = db
    .prepare("SELECT name, SUM(pgsize) AS bytes, COUNT(*) AS pages FROM dbstat WHERE name IN (SELECT name FROM sqlite_schema WHERE tbl_name = 'deliveries' AND type IN ('table', 'index')) GROUP BY name")
    .all();
  const byName = Object.fromEntries(rows.map((row) => [row.name, Number(row.bytes) - pageSize]));
  return { total: Object.values(byName).reduce((sum, bytes) => sum + bytes, 0), byName };
}

/** Average bytes of each column of a stored delivery (SQLite's length(): bytes of a BLOB, characters of text). */
function columnBytes(db) {
  const names = db.prepare("SELECT name FROM pragma_table_info('deliveries')").all().map((row) => row.name);
  const row = db.prepare(`SELECT ${names.map((name) => `AVG(COALESCE(length(CAST("${name}" AS BLOB)), 0)) AS "${name}"`).join(", ")} FROM deliveries`).get();
  return Object.fromEntries(names.map((name) => [name, Math.round(Number(row[name]))]));
}

/**
 * A what-if, measured on a second copy: the bytes of the deliveries' b-trees plus a rowid table
 * holding the bodies, had each body been stored there instead. `deliveries` is WITHOUT ROWID: a
 * row of more than about 1,000 bytes (a 4 KiB page's index-style limit) keeps 489 bytes in its page
 * and puts the rest in overflow pages of its own, each a whole page; a rowid table keeps a row of
 * up to 4,061 bytes in its page, beside others.
 */
function bodiesInRowidTable(file, DatabaseSync) {
  const copy = `${file}.what-if`;
  cpSync(file, copy);
  try {
    const db = new DatabaseSync(copy);
    db.exec("CREATE TABLE delivery_bodies (body BLOB, body_encoding TEXT); INSERT INTO delivery_bodies SELECT body, body_encoding FROM deliveries; UPDATE deliveries SET body = NULL;");
    const pageSize = db.prepare("PRAGMA page_size").get().page_size;
    const bodies = Number(db.prepare("SELECT SUM(pgsize) AS bytes FROM dbstat WHERE name = 'delivery_bodies'").get().bytes) - pageSize;
    const total = deliveriesBytes(db).total + bodies;
    db.close();
    return total;
  } finally {
    rmSync(copy, { force: true });
  }
}

/** The sweeper's body pruning (store/d1/sweep.ts `clearBodies`), on every done row. */
const CLEAR_BODIES = "UPDATE deliveries SET body = NULL, body_encoding = NULL, headers = NULL WHERE status = 'done' AND body IS NOT NULL";

/** One set through an inbox of its own; its bytes per delivery with and without bodies. */
async function measureSet(name, deliveries, DatabaseSync) {
  // The tuned configuration's trace collector setting (throughput.mjs): its CPU is not the inbox's.
  const observability = process.env.X_LOCAL_OBSERVABILITY;
  process.env.X_LOCAL_OBSERVABILITY = "false";
  const inbox = new LocalInbox({});
  try {
    await inbox.start();
    const cpuBefore = runtimeCpuMs(inbox);
    const { stored, receivedBytes } = await sendAll(inbox, deliveries);
    const settled = async () => {
      const counts = (await inbox.admin("/admin/stats")).json?.counts;
      return counts !== undefined && counts.done + counts.failed >= stored;
    };
    if (!(await waitFor(settled, { timeoutMs: 300_000, intervalMs: 500 }))) throw new Error(`${name}: deliveries still waiting after 5 minutes`);
    const runtimeCpuMsPerDelivery = cpuPerUnit(cpuBefore, runtimeCpuMs(inbox), stored);
    const counts = (await inbox.admin("/admin/stats")).json.counts;
    await inbox.kill();
    const source = d1File(inbox.stateDir, DatabaseSync);
    const copy = mkdtempSync(join(tmpdir(), "bench-capacity-"));
    try {
      for (const file of readdirSync(source.dir).filter((each) => each.startsWith(source.name))) cpSync(join(source.dir, file), join(copy, file));
      const db = new DatabaseSync(join(copy, source.name));
      const rows = Number(db.prepare("SELECT COUNT(*) AS n FROM deliveries").get().n);
      const compressed = Number(db.prepare("SELECT COUNT(*) AS n FROM deliveries WHERE body_encoding IS NOT NULL").get().n);
      const bodyBytes = Number(db.prepare("SELECT SUM(length(body)) AS n FROM deliveries").get().n);
      const withBody = deliveriesBytes(db);
      const columns = columnBytes(db);
      const sideTable = bodiesInRowidTable(join(copy, source.name), DatabaseSync);
      db.exec(CLEAR_BODIES);
      const withoutBody = deliveriesBytes(db);
      db.close();
      return {
        name,
        deliveries: rows,
        done: counts.done,
        failed: counts.failed,
        // Sent 8 at a time, not under load: what these payloads cost end to end, not a throughput figure.
        runtimeCpuMsPerDelivery,
        compressedShare: round(compressed / rows),
        receivedBodyBytesPerDelivery: Math.round(receivedBytes / stored),
        storedBodyBytesPerDelivery: Math.round(bodyBytes / rows),
        bytesPerDeliveryWithBody: Math.round(withBody.total / rows),
        bytesPerDeliveryWithoutBody: Math.round(withoutBody.total / rows),
        columns,
        // Not what the inbox does: the same rows with each body moved to a rowid table of its own (see bodiesInRowidTable).
        bytesPerDeliveryWithBodyInRowidTable: Math.round(sideTable / rows),
        byIndex: Object.fromEntries(Object.keys(withBody.byName).map((key) => [key, { withBody: Math.round(withBody.byName[key] / rows), withoutBody: Math.round((withoutBody.byName[key] ?? 0) / rows) }])),
        totals: { receivedBytes, withBody: withBody.total, withoutBody: withoutBody.total },
      };
    } finally {
      rmSync(copy, { recursive: true, force: true });
    }
  } finally {
    await inbox.stop();
    if (observability === undefined) delete process.env.X_LOCAL_OBSERVABILITY;
    else process.env.X_LOCAL_OBSERVABILITY = observability;
  }
}

/** Deliveries a month that fit in `limitBytes` at steady state, each holding `withBody` bytes for `bodiesDays` and `withoutBody` after, up to `rowsDays`. */
export function deliveriesPerMonth({ withBody, withoutBody }, { rowsDays, bodiesDays }, limitBytes = D1_LIMIT_BYTES) {
  const bodyDays = Math.min(bodiesDays, rowsDays);
  const byteDaysPerDelivery = bodyDays * withBody + (rowsDays - bodyDays) * withoutBody;
  return Math.floor((limitBytes / byteDaysPerDelivery) * MONTH_DAYS);
}

/**
 * Measures both sets and the capacity of one D1 database: `storedBytesRatio` (bytes stored per
 * delivery with its body, row, indexes and body, ÷ body bytes received) and
 * `deliveriesPerMonthPerD1`, over the two sets together (each delivery weighs the same).
 */
export async function measureCapacity() {
  let DatabaseSync;
  try {
    ({ DatabaseSync } = await import("node:sqlite"));
  } catch {
    throw new Error("the capacity measurement reads D1's file with node:sqlite: run it with Node 22 (npm run bench uses the project's own)");
  }
  const retention = defaultRetention();
  const sets = [await measureSet("GitHub (@octokit/webhooks-examples)", await githubDeliveries(), DatabaseSync), await measureSet("Stripe (documented event shapes)", stripeDeliveries(), DatabaseSync)];
  const deliveries = sets.reduce((sum, set) => sum + set.deliveries, 0);
  const total = (key) => sets.reduce((sum, set) => sum + set.totals[key], 0);
  const perDelivery = { withBody: Math.round(total("withBody") / deliveries), withoutBody: Math.round(total("withoutBody") / deliveries) };
  for (const set of sets) {
    set.storedBytesRatio = round(set.bytesPerDeliveryWithBody / set.receivedBodyBytesPerDelivery);
    set.deliveriesPerMonthPerD1 = deliveriesPerMonth({ withBody: set.bytesPerDeliveryWithBody, withoutBody: set.bytesPerDeliveryWithoutBody }, retention);
  }
  return {
    retention,
    d1LimitBytes: D1_LIMIT_BYTES,
    deliveries,
    receivedBodyBytesPerDelivery: Math.round(total("receivedBytes") / deliveries),
    bytesPerDeliveryWithBody: perDelivery.withBody,
    bytesPerDeliveryWithoutBody: perDelivery.withoutBody,
    storedBytesRatio: round(total("withBody") / total("receivedBytes")),
    deliveriesPerMonthPerD1: deliveriesPerMonth(perDelivery, retention),
    sets,
  };
}

const shownCpu = (value) => (value === null ? "n/a" : value);

/** Prints what `measureCapacity` measured. */
export function printCapacity(capacity) {
  const { rowsDays, bodiesDays } = capacity.retention;
  console.log(`\ncapacity of one D1 database (10 GB), default retention: rows ${rowsDays} days, bodies ${bodiesDays} days (measured in the local D1 file with dbstat: table and indexes, whole pages)`);
  const row = (each) => ({
    deliveries: each.deliveries,
    "body bytes received": each.receivedBodyBytesPerDelivery,
    "stored bytes with body": each.bytesPerDeliveryWithBody,
    "÷ received": each.storedBytesRatio,
    "stored bytes after body retention": each.bytesPerDeliveryWithoutBody,
    "deliveries per month": each.deliveriesPerMonthPerD1.toLocaleString("en"),
  });
  console.table({ ...Object.fromEntries(capacity.sets.map((set) => [set.name, row(set)])), "both sets": row(capacity) });
  for (const set of capacity.sets) {
    console.log(`  ${set.name}: ${Math.round(set.compressedShare * 100)}% of bodies stored compressed, ${set.storedBodyBytesPerDelivery} body bytes stored each; runtime CPU ${shownCpu(set.runtimeCpuMsPerDelivery)} ms per delivery end to end (sent 8 at a time); per delivery by b-tree (with body / after):`);
    console.log(`    ${Object.entries(set.byIndex).map(([name, bytes]) => `${name} ${bytes.withBody}/${bytes.withoutBody}`).join(", ")}`);
    console.log(`    columns, average bytes: ${Object.entries(set.columns).filter(([, bytes]) => bytes > 0).map(([name, bytes]) => `${name} ${bytes}`).join(", ")}`);
    console.log(`    what-if, not what the inbox does: the bodies in a rowid table of their own, ${set.bytesPerDeliveryWithBodyInRowidTable} bytes per delivery with body (WITHOUT ROWID rows over ~1 KB spill into whole overflow pages)`);
  }
  console.log(`  ≈ ${(capacity.deliveriesPerMonthPerD1 / 1e6).toFixed(1)} M deliveries a month fit one D1 database; past it: Postgres through Hyperdrive, or shorter retention (docs/benchmark.md "Capacity")`);
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) printCapacity(await measureCapacity());
