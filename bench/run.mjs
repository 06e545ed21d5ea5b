#!/usr/bin/env node
/**
 * `npm run bench`: the inbox against a no-op worker in the same local runtime, measured in one
 * run, side by side, with load from wrk (a C load generator: it leaves the runtime the cores a
 * Node one would take). Not a test: it asserts nothing about time; it prints ratios and writes
 * bench/results.json.
 *
 * Two configurations, both measured and printed:
 * - "npm run dev": what `npm run dev` runs: state on disk, wrangler's defaults (its local trace
 *   collector on);
 * - "tuned": state in /dev/shm and the trace collector off (X_LOCAL_OBSERVABILITY=false): it
 *   receives the tail events of every invocation and stores them, on the runtime's one thread;
 *   production has no such thing.
 *
 * Rows of each:
 * - baseline: bench/noop (reads the body, answers 200), 16 connections
 * - ingest: Stripe-signed deliveries, unique ids with 10% repeats, 16 connections, while the
 *   queue consumer processes them as it would in production; with the backlog it leaves (the
 *   oldest waiting delivery during the load, and how long it takes to drain after)
 * - ingest alone: the same load on the same worker without the consumer: in production the
 *   consumer runs in other isolates, here it shares the runtime's one thread
 * - end to end: N deliveries from the first send until all are `done`
 * - end to end on Postgres: the same, on the Postgres store (wrangler.toml's `postgres`
 *   environment) and a private Postgres server in the configuration's state folder, with what the
 *   database did per delivery (bench/postgres.mjs); on by default when Postgres is installed,
 *   BENCH_POSTGRES=0 leaves it out
 * - on disk: the fsyncs of the runtime per delivery (strace, over a pass of its own)
 */
import { execFileSync, spawn } from "node:child_process";
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { dashboardUnderLoad, FIXTURE_ROWS, printDashboard } from "./dashboard.mjs";
import { benchPostgres, postgresBench, postgresCostPerDelivery } from "./postgres.mjs";
import { requireWrk, runWrk } from "./wrk.mjs";

const { LocalInbox, ROOT, configWithoutConsumer, waitFor } = await import("../test/e2e/harness.mjs");
const { paymentEvent, stripeDeliveryByHmac } = await import("../test/e2e/signers.mjs");

const CONNECTIONS = 16;
const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const END_TO_END_DELIVERIES = Number(process.env.BENCH_DELIVERIES ?? 2_000);
const FSYNC_DELIVERIES = Number(process.env.BENCH_FSYNC_DELIVERIES ?? 300);
const STRIPE_SECRET = "whsec_bench_secret";
const DISK_DIR = process.env.BENCH_STATE_DIR ?? tmpdir();

const CONFIGURATIONS = [
  { name: "npm run dev", stateDir: DISK_DIR, observability: undefined, countFsyncs: true },
  { name: "tuned", stateDir: existsSync("/dev/shm") ? "/dev/shm" : DISK_DIR, observability: "false", countFsyncs: false },
  // Ablations, only when named in BENCH_CONFIGS: which of the two settings costs what.
  { name: "disk-collector-off", stateDir: DISK_DIR, observability: "false", countFsyncs: true, ablation: true },
  { name: "memory-collector-on", stateDir: existsSync("/dev/shm") ? "/dev/shm" : DISK_DIR, observability: undefined, countFsyncs: false, ablation: true },
];

/** Signed Stripe `payment_intent.succeeded` deliveries, ready for wrk. */
function signedPayments(ids) {
  return ids.map((id) => ({ path: "/webhooks/stripe", ...stripeDeliveryByHmac(paymentEvent(id, 1999, "cus_bench"), STRIPE_SECRET) }));
}

/** `count` fresh ids, with every 10th repeating a recent one (a provider's retry). */
function deliveryIds(prefix, count) {
  return Array.from({ length: count }, (_, index) => (index % 10 === 9 ? `${prefix}_${index - 5}` : `${prefix}_${index}`));
}

/** Enough requests for a load of `seconds` at a rate no run here reaches. */
const requestsFor = (seconds) => Math.max(2_000, seconds * 1_500);

/** The workerd process that runs the worker (not wrangler's proxy), or null where /proc is not there. */
function runtimePid(inbox) {
  if (!existsSync("/proc/self/stat")) return null;
  const parentOf = new Map();
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      parentOf.set(Number(entry), Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]));
    } catch {
      // gone meanwhile
    }
  }
  const isDescendant = (pid) => {
    for (let at = pid; at > 1; at = parentOf.get(at) ?? 0) if (at === inbox.child?.pid) return true;
    return false;
  };
  for (const pid of parentOf.keys()) {
    if (!isDescendant(pid)) continue;
    let command;
    try {
      command = readFileSync(`/proc/${pid}/cmdline`, "utf8");
    } catch {
      continue;
    }
    // wrangler dev runs two workerd processes: a proxy that owns the public port, and the runtime.
    if (command.includes("workerd") && !command.includes(`entry=127.0.0.1:${inbox.port}`)) return pid;
  }
  return null;
}

const CLOCK_TICKS = existsSync("/proc/self/stat") ? Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).trim()) || 100 : 100;

/**
 * CPU time (ms) used so far by the runtime: the worker, its Durable Objects, local D1 and the queue
 * broker share its one thread, so its CPU per delivery is what the inbox costs, whatever the load
 * generator and wrangler's proxy can push through.
 */
function runtimeCpuMs(inbox) {
  const pid = runtimePid(inbox);
  if (pid === null) return null;
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS;
}

/** Runtime CPU ms per unit of work between two readings, or null where there are none. */
function cpuPerUnit(before, after, units) {
  return before === null || after === null ? null : round((after - before) / units);
}

/** One timed load: wrk's summary and the runtime's CPU per request. */
async function measure(runtime, run) {
  const before = runtimeCpuMs(runtime);
  const result = await run();
  return { ...result, runtimeCpuMsPerRequest: cpuPerUnit(before, runtimeCpuMs(runtime), result.requests) };
}

const oldestWaiting = async (inbox) => (await inbox.admin("/admin/stats")).json?.oldestWaitingSeconds ?? null;

/** Waits until nothing is left for the consumer; returns how long that took (s). */
async function drained(inbox) {
  const started = Date.now();
  if (!(await waitFor(async () => (await oldestWaiting(inbox)) === null, { timeoutMs: 600_000, intervalMs: 500 }))) {
    throw new Error("the inbox still had deliveries waiting after 10 minutes");
  }
  return round((Date.now() - started) / 1000);
}

/** Polls the oldest waiting delivery every second while `work` runs; returns the work's result and the largest age seen. */
async function watchingBacklog(inbox, work) {
  let largest = 0;
  let running = true;
  const watcher = (async () => {
    while (running) {
      largest = Math.max(largest, (await oldestWaiting(inbox)) ?? 0);
      await new Promise((resolve) => setTimeout(resolve, 1_000));
    }
  })();
  try {
    return { result: await work(), oldestWaitingMaxSeconds: largest };
  } finally {
    running = false;
    await watcher;
    largest = Math.max(largest, (await oldestWaiting(inbox)) ?? 0);
  }
}

/**
 * Baseline and ingest, ROUNDS times in turn, both runtimes up all along: each ratio compares two
 * measurements taken a few seconds apart, so a slow patch of this shared VM shows as one odd round.
 * Each load is preceded by 2 s of the same load, so the ingest measurement starts with the
 * consumer already at work, as under sustained traffic.
 */
async function sideBySide() {
  const noop = new LocalInbox({ config: join(ROOT, "bench", "noop", "wrangler.toml") });
  const inbox = new LocalInbox({ vars: { STRIPE_WEBHOOK_SECRET: STRIPE_SECRET } });
  try {
    await noop.start();
    await inbox.start();
    // One per wrk thread at least (each thread replays its own share), or half the connections idle.
    const noopRequests = signedPayments(["evt_noop_1", "evt_noop_2", "evt_noop_3", "evt_noop_4"]);
    const noopLoad = (seconds) => runWrk({ url: noop.url, requests: noopRequests, seconds, connections: CONNECTIONS });
    const rounds = [];
    for (let index = 1; index <= ROUNDS; index++) {
      await drained(inbox);
      await noopLoad(2);
      const baseline = await measure(noop, () => noopLoad(SECONDS));
      const warm = signedPayments(deliveryIds(`evt_warm${index}`, requestsFor(2)));
      await runWrk({ url: inbox.url, requests: warm, seconds: 2, connections: CONNECTIONS });
      const load = signedPayments(deliveryIds(`evt_ingest${index}`, requestsFor(SECONDS)));
      // Includes the consumer's work done meanwhile: locally it shares the runtime's thread.
      const { result: ingest, oldestWaitingMaxSeconds } = await watchingBacklog(inbox, () =>
        measure(inbox, () => runWrk({ url: inbox.url, requests: load, seconds: SECONDS, connections: CONNECTIONS })),
      );
      const drainSeconds = await drained(inbox);
      rounds.push({ baseline, ingest, oldestWaitingMaxSeconds, drainSeconds, ratio: round(ingest.requestsPerSecond / baseline.requestsPerSecond) });
      console.log(
        `  round ${index}/${ROUNDS}: baseline ${baseline.requestsPerSecond} req/s, ingest ${ingest.requestsPerSecond} req/s, ratio ${rounds.at(-1).ratio}; backlog: oldest ${oldestWaitingMaxSeconds} s, drained ${drainSeconds} s after`,
      );
    }
    return rounds;
  } finally {
    await noop.stop();
    await inbox.stop();
  }
}

/** The receiver without a consumer (see configWithoutConsumer). */
async function ingestAlone() {
  const config = configWithoutConsumer();
  const inbox = new LocalInbox({ config: config.path, migrate: true, vars: { STRIPE_WEBHOOK_SECRET: STRIPE_SECRET } });
  try {
    await inbox.start();
    await runWrk({ url: inbox.url, requests: signedPayments(deliveryIds("evt_alone_warm", requestsFor(2))), seconds: 2, connections: CONNECTIONS });
    const load = signedPayments(deliveryIds("evt_alone", requestsFor(SECONDS)));
    return await measure(inbox, () => runWrk({ url: inbox.url, requests: load, seconds: SECONDS, connections: CONNECTIONS }));
  } finally {
    await inbox.stop();
    config.remove();
  }
}

/**
 * `count` unique deliveries sent at 16 connections; timed from the first send until all are done.
 * With `postgres`, on the Postgres store and a private server of its own, whose cost is added.
 */
async function endToEnd(count, { traceFsyncs = false, postgres = false } = {}) {
  const database = postgres ? await benchPostgres() : null;
  const inbox = new LocalInbox({ vars: { STRIPE_WEBHOOK_SECRET: STRIPE_SECRET }, ...(database ? { postgres: { url: database.url } } : {}) });
  let strace = null;
  try {
    await inbox.start();
    const requests = signedPayments(Array.from({ length: count }, (_, index) => `evt_e2e_${index}`));
    if (traceFsyncs) strace = await traceFsyncsOf(runtimePid(inbox));
    let done = 0;
    let polls = 0;
    const allDone = async () => {
      polls++;
      return (done = (await inbox.admin("/admin/stats")).json?.counts?.done ?? 0) >= count;
    };
    const databaseBefore = database ? await database.counters() : null;
    const cpuBefore = runtimeCpuMs(inbox);
    const started = Date.now();
    // Each poll is a full count over the deliveries: poll gently, it competes with the work measured.
    const sent = await runWrk({ url: inbox.url, requests, connections: CONNECTIONS, total: count, until: allDone });
    const allDoneMs = Date.now() - started;
    const cpuAfter = runtimeCpuMs(inbox);
    const fsyncs = strace ? await strace.stop() : null;
    // Each poll is one statement on a connection of its own (/admin/stats): not the inbox's work.
    const databaseCost = database ? postgresCostPerDelivery(databaseBefore, await database.counters(), count, { ownSessions: polls, connectionCpuMs: database.connectionCpuMs }) : null;
    // Exactly once: one payments row per delivery done, or the run fails.
    const paymentsRows = database ? (await inbox.sql("SELECT count(*) AS n FROM payments"))[0].n : null;
    if (database && paymentsRows !== done) console.error(`  Postgres: ${paymentsRows} payments rows for ${done} deliveries done`);
    return {
      deliveries: count,
      done,
      non2xx: sent.non2xx,
      errors: sent.errors,
      p50Ms: sent.p50Ms,
      p99Ms: sent.p99Ms,
      allDoneSeconds: allDoneMs / 1000,
      deliveriesPerSecond: Math.round((done / allDoneMs) * 1000),
      runtimeCpuMsPerDelivery: cpuPerUnit(cpuBefore, cpuAfter, count),
      fsyncsPerDelivery: fsyncs === null ? null : round(fsyncs / count),
      notDone: count - done,
      ...(databaseCost ? { postgres: { ...databaseCost, polls, paymentsRows } } : {}),
    };
  } finally {
    await strace?.stop();
    await inbox.stop();
    await database?.stop();
  }
}

/**
 * Reads an `strace -f -y` log of fsync/fdatasync calls, prints them by kind of file (the state
 * directory's hashed names folded into `*`), and returns their number.
 */
function fsyncsByFile(log) {
  const kinds = new Map();
  let calls = 0;
  for (const line of readFileSync(log, "utf8").split("\n")) {
    const match = /(fsync|fdatasync)\(\d+<([^>]*)>/.exec(line);
    if (!match) continue;
    calls++;
    const kind = `${match[1]} ${match[2].replace(/^.*?\/(v3|wrangler-[^/]*)\//, "").replace(/[0-9a-f]{16,}/g, "*")}`;
    kinds.set(kind, (kinds.get(kind) ?? 0) + 1);
  }
  for (const [kind, count] of [...kinds].sort((a, b) => b[1] - a[1])) console.log(`    ${String(count).padStart(6)}  ${kind}`);
  return calls;
}

/**
 * Counts the fsync and fdatasync calls of a process and its threads with strace (Debian's
 * `strace`); `stop()` detaches and resolves the count. Null when strace is missing.
 */
async function traceFsyncsOf(pid) {
  if (pid === null) return null;
  try {
    execFileSync("strace", ["-V"], { stdio: "ignore" });
  } catch {
    console.warn("  (no strace: fsyncs not counted; `apt-get install -y strace` adds them)");
    return null;
  }
  // BENCH_FSYNC_FILES=1: a profile too, the calls by the kind of file they sync (-y names each fd).
  const byFile = process.env.BENCH_FSYNC_FILES === "1";
  const log = join(tmpdir(), `bench-fsyncs-${pid}.txt`);
  const args = byFile ? ["-f", "-y", "-o", log, "-e", "trace=fsync,fdatasync", "-p", String(pid)] : ["-c", "-f", "-e", "trace=fsync,fdatasync", "-p", String(pid)];
  const child = spawn("strace", args, { stdio: ["ignore", "ignore", "pipe"] });
  let output = "";
  child.stderr.on("data", (chunk) => (output += chunk));
  const exited = new Promise((resolve) => child.once("exit", resolve));
  await new Promise((resolve) => setTimeout(resolve, 1_000)); // attached to every thread
  let result;
  return {
    async stop() {
      if (result !== undefined) return result;
      child.kill("SIGINT");
      await exited;
      // The summary's last line: "100.00  <seconds>  <usecs/call>  <calls>  [errors]  total". None
      // when strace could not attach (ptrace refused): then nothing was counted, not zero.
      if (byFile) {
        result = fsyncsByFile(log);
        return result;
      }
      const total = output.split("\n").find((line) => /\btotal\s*$/.test(line));
      result = total ? Number(total.trim().split(/\s+/)[3]) : null;
      if (result === null) console.warn(`  (strace counted nothing: ${output.trim().split("\n")[0] ?? "no output"})`);
      return result;
    },
  };
}

const round = (value) => Math.round(value * 100) / 100;
const shown = (value) => (value === null || value === undefined ? "n/a" : value);

/** Counts one delivery's billable operations with bench/meter.spec.ts (run in workerd by vitest). */
function meterOperations() {
  const output = execFileSync(process.execPath, [join(ROOT, "node_modules", "vitest", "vitest.mjs"), "run", "--config", "test/vitest.config.ts"], {
    cwd: ROOT,
    env: { ...process.env, BENCH_METER: "1" },
    encoding: "utf8",
    maxBuffer: 64 * 1024 * 1024,
  });
  const line = output.split("\n").find((text) => text.includes("METER {"));
  if (!line) throw new Error(`the operation counter printed no METER line:\n${output.slice(-2_000)}`);
  return JSON.parse(line.slice(line.indexOf("{")));
}

/**
 * Cloudflare list prices (Workers Paid, USD), per million: Workers requests $0.30; D1 rows read
 * $0.001 and written $1.00; Durable Object requests $0.15 (an RPC call or an alarm each) and
 * SQLite storage rows written $1.00; Queues $0.40 per million operations, three per message
 * (write, read, delete). Included free allowances, CPU time and DO duration are left out.
 */
function costPerMillion(meter) {
  const perDelivery = (value) => value / meter.deliveries;
  const usage = {
    workerRequests: perDelivery(meter.requests + meter.consumerBatches),
    d1RowsRead: perDelivery(meter.total.d1RowsRead),
    d1RowsWritten: perDelivery(meter.total.d1RowsWritten),
    durableObjectRequests: perDelivery(meter.total.durableObjectRequests),
    durableObjectRowsWritten: perDelivery(meter.total.leaseStorageRowsWritten),
    queueOperations: perDelivery(meter.total.queueMessages) * 3,
  };
  const price = { workerRequests: 0.3, d1RowsRead: 0.001, d1RowsWritten: 1, durableObjectRequests: 0.15, durableObjectRowsWritten: 1, queueOperations: 0.4 };
  const dollars = Object.fromEntries(Object.entries(usage).map(([key, perOne]) => [key, round(perOne * price[key])]));
  const total = round(Object.values(dollars).reduce((a, b) => a + b, 0));
  // The handler's own effect is the user's cost, not the inbox's: both totals are shown.
  const effect = round((meter.total.effectRowsWritten / meter.deliveries) * price.d1RowsWritten);
  return {
    perDelivery: Object.fromEntries(Object.entries(usage).map(([key, value]) => [key, round(value)])),
    dollarsPerMillionDeliveries: dollars,
    total,
    inboxAlone: round(total - effect),
    handlerEffect: effect,
  };
}

/** Measures one configuration: its environment is set for the runtimes started meanwhile. */
async function measureConfiguration(configuration) {
  process.env.TMPDIR = configuration.stateDir;
  if (configuration.observability === undefined) delete process.env.X_LOCAL_OBSERVABILITY;
  else process.env.X_LOCAL_OBSERVABILITY = configuration.observability;
  console.log(`\n${configuration.name}: state in ${configuration.stateDir}, X_LOCAL_OBSERVABILITY=${configuration.observability ?? "(wrangler's default)"}`);
  const rounds = await sideBySide();
  // The round with the median ratio stands for the run; all rounds are printed and kept.
  const median = [...rounds].sort((a, b) => a.ratio - b.ratio)[Math.floor(rounds.length / 2)];
  const alone = await ingestAlone();
  const e2e = await endToEnd(END_TO_END_DELIVERIES);
  const e2ePostgres = POSTGRES.enabled ? await endToEnd(END_TO_END_DELIVERIES, { postgres: true }) : null;
  const fsyncs = configuration.countFsyncs ? await endToEnd(FSYNC_DELIVERIES, { traceFsyncs: true }) : null;
  const base = median.baseline;
  return {
    ...configuration,
    rounds,
    baseline: base,
    ingest: median.ingest,
    backlog: { oldestWaitingMaxSeconds: Math.max(...rounds.map((each) => each.oldestWaitingMaxSeconds)), drainSeconds: Math.max(...rounds.map((each) => each.drainSeconds)) },
    ingestAlone: alone,
    endToEnd: e2e,
    endToEndPostgres: e2ePostgres,
    fsyncsPerDelivery: fsyncs?.fsyncsPerDelivery ?? null,
    ratios: {
      ingestVsBaseline: round(median.ingest.requestsPerSecond / base.requestsPerSecond),
      ingestAloneVsBaseline: round(alone.requestsPerSecond / base.requestsPerSecond),
      endToEndVsBaseline: round(e2e.deliveriesPerSecond / base.requestsPerSecond),
      endToEndPostgresVsBaseline: e2ePostgres ? round(e2ePostgres.deliveriesPerSecond / base.requestsPerSecond) : null,
      ingestP99VsBaselineP99: round(median.ingest.p99Ms / Math.max(0.1, base.p99Ms)),
    },
  };
}

function printConfiguration(result) {
  const { baseline: base, ingest: ours, ingestAlone: alone, endToEnd: e2e, ratios } = result;
  console.log(`\n${result.name} (state in ${result.stateDir}, X_LOCAL_OBSERVABILITY=${result.observability ?? "wrangler's default"}); baseline and ingest: the median of ${result.rounds.length} rounds by ratio (${result.rounds.map((each) => each.ratio).join(", ")})`);
  const row = (measured, ratio) => ({ "req/s": measured.requestsPerSecond ?? measured.deliveriesPerSecond, "÷ no-op": ratio, "p50 ms": measured.p50Ms, "p99 ms": measured.p99Ms, failed: measured.non2xx + (measured.errors ?? 0), "runtime CPU ms each": shown(measured.runtimeCpuMsPerRequest ?? measured.runtimeCpuMsPerDelivery) });
  console.table({
    "baseline (no-op worker)": row(base, 1),
    "ingest, consumer running": row(ours, ratios.ingestVsBaseline),
    "ingest alone (no consumer)": row(alone, ratios.ingestAloneVsBaseline),
    [`end to end (${e2e.deliveries} until done)`]: row(e2e, ratios.endToEndVsBaseline),
    ...(result.endToEndPostgres ? { [`end to end on Postgres (${result.endToEndPostgres.deliveries} until done)`]: row(result.endToEndPostgres, ratios.endToEndPostgresVsBaseline) } : {}),
  });
  if (result.endToEndPostgres) printPostgresCost(result.endToEndPostgres);
  console.log(
    `ingest p99 ÷ no-op p99 = ${ratios.ingestP99VsBaselineP99}; backlog under ${SECONDS} s of full-rate ingest: oldest waiting at most ${result.backlog.oldestWaitingMaxSeconds} s, drained ${result.backlog.drainSeconds} s after the load${result.fsyncsPerDelivery === null ? "" : `; fsyncs per delivery: ${result.fsyncsPerDelivery}`}`,
  );
}

/** What the Postgres server did per delivery of the end-to-end row on Postgres. */
function printPostgresCost(e2e) {
  const cost = e2e.postgres;
  const total = cost.cpuMs === null || e2e.runtimeCpuMsPerDelivery === null ? "n/a" : round(cost.cpuMs + e2e.runtimeCpuMsPerDelivery);
  console.log(
    `Postgres, per delivery: ${cost.rowsWritten} rows written (${cost.inserted} inserted, ${cost.updated} updated, ${cost.deleted} deleted; ${cost.rowsWrittenWithoutEffect} without the handler's payments row), ` +
      `${cost.walBytes} WAL bytes, ${cost.transactions} transactions committed (${cost.rollbacks} rolled back), ${cost.connections} connections (Hyperdrive would pool them), ` +
      `${shown(cost.cpuMs)} ms of the server's CPU (runtime + server: ${total} ms; ${shown(cost.cpuMsWithoutConnections)} ms without the connections, at ${shown(cost.connectionCpuMs)} ms each; ` +
      `the CPU includes the bench's ${cost.polls} polls of /admin/stats, one connection each)`,
  );
  console.table(Object.fromEntries(Object.entries(cost.byTable).map(([table, each]) => [table, { "inserted each": each.inserted, "updated each": each.updated, "deleted each": each.deleted, "rows written": each.rows }])));
}

requireWrk();
const POSTGRES = postgresBench();
if (!POSTGRES.enabled) console.log(`end to end on Postgres left out: ${POSTGRES.reason}`);
const meter = meterOperations();
const cost = costPerMillion(meter);
const configurations = [];
// BENCH_CONFIGS="tuned" (names, comma-separated) measures only those.
const chosen = process.env.BENCH_CONFIGS?.split(",").map((name) => name.trim());
for (const configuration of CONFIGURATIONS.filter((each) => (chosen ? chosen.includes(each.name) : !each.ablation))) configurations.push(await measureConfiguration(configuration));
// The dashboard under load (bench/dashboard.mjs), in the tuned configuration; BENCH_DASHBOARD=0 skips it.
let dashboard = null;
if (process.env.BENCH_DASHBOARD !== "0") {
  const tuned = CONFIGURATIONS.find((each) => each.name === "tuned");
  process.env.TMPDIR = tuned.stateDir;
  process.env.X_LOCAL_OBSERVABILITY = tuned.observability;
  console.log(`\ndashboard under load: ${FIXTURE_ROWS.toLocaleString("en")} stored deliveries, tuned configuration`);
  dashboard = await dashboardUnderLoad({ seconds: SECONDS, rounds: ROUNDS });
}
const results = { measuredAt: new Date().toISOString(), loadGenerator: "wrk", connections: CONNECTIONS, seconds: SECONDS, configurations, dashboard, operations: meter, cost };
writeFileSync(join(ROOT, "bench", "results.json"), `${JSON.stringify(results, null, 2)}\n`);

console.log(`\nwebhook-inbox benchmark (local runtime, one run, wrk -t2 -c${CONNECTIONS}, ${SECONDS} s loads)`);
for (const result of configurations) printConfiguration(result);
console.log(
  "\nruntime CPU ms each: CPU time of the workerd process that runs the worker (with its Durable Objects, local D1 and queue broker, on one thread) per request, or per delivery end to end; ingest includes the consumer's work meanwhile. On Postgres the database runs in a server of its own: its CPU is not in this column but in the Postgres line under the table.",
);
if (dashboard) printDashboard(dashboard);
console.log(`\nper delivery (measured over ${meter.deliveries} deliveries, 10% sent twice, with an example effect of one keyed row):`);
console.table({
  "D1 statements": { all: round(meter.total.d1Statements / meter.deliveries), "hot path (without the handler's effect)": round((meter.total.d1Statements - meter.total.effectStatements) / meter.deliveries) },
  "D1 round trips": { all: round(meter.total.d1RoundTrips / meter.deliveries), "hot path (without the handler's effect)": round(meter.total.d1RoundTrips / meter.deliveries) },
  "D1 rows written": { all: round(meter.total.d1RowsWritten / meter.deliveries), "hot path (without the handler's effect)": round((meter.total.d1RowsWritten - meter.total.effectRowsWritten) / meter.deliveries) },
  "lease storage rows written (counted)": { all: round(meter.total.leaseStorageRowsWritten / meter.deliveries), "hot path (without the handler's effect)": round(meter.total.leaseStorageRowsWritten / meter.deliveries) },
});
console.log("billable operations per delivery and cost per million deliveries at list prices:");
console.table(
  Object.fromEntries(
    Object.keys(cost.perDelivery).map((key) => [key, { "per delivery": cost.perDelivery[key], "$ per million deliveries": cost.dollarsPerMillionDeliveries[key] }]),
  ),
);
console.log(
  `total ≈ $${cost.total} per million deliveries with the example handler's effect (one keyed row: $${cost.handlerEffect}); the inbox alone ≈ $${cost.inboxAlone} (free allowances, CPU time and Durable Object duration not included)`,
);
console.log("written: bench/results.json");

// A failed request is not throughput: a run with any is reported as failed, whatever its ratios.
const failures = configurations
  .flatMap((result) => [...result.rounds.flatMap((each) => [each.baseline, each.ingest]), result.ingestAlone, result.endToEnd, ...(result.endToEndPostgres ? [result.endToEndPostgres] : [])])
  .reduce((sum, each) => sum + each.non2xx + (each.errors ?? 0) + (each.notDone ?? 0) + (each.postgres ? Math.abs(each.postgres.paymentsRows - each.done) : 0), 0);
if (failures > 0) {
  console.error(`\n${failures} requests failed (non-2xx, connection errors, deliveries not done end to end, or payments rows on Postgres not one per delivery done) during the measured loads: see bench/results.json`);
  process.exitCode = 1;
}
