/**
 * The throughput side of `npm run bench`: the inbox against a no-op worker in the same local
 * runtime, loaded in turn with wrk, per configuration (see run.mjs):
 * - baseline: bench/noop (reads the body, answers 200), 16 connections
 * - ingest: Stripe-signed deliveries, unique ids with 10% repeats, 16 connections, while the
 *   queue consumer processes them as it would in production; with the backlog it leaves (the
 *   oldest waiting delivery during the load, and how long it takes to drain after)
 * - ingest alone: the same load on the same worker without the consumer: in production the
 *   consumer runs in other isolates, here it shares the runtime's one thread
 * - end to end: N deliveries from the first send until all are `done`
 * - end to end on Postgres: the same, on the Postgres store (wrangler.toml's `postgres`
 *   environment) and a private Postgres server in the configuration's state folder, with what the
 *   database did per delivery (bench/postgres.mjs)
 * - on disk: the fsyncs of the runtime per delivery (bench/fsyncs.mjs, over a pass of its own)
 */
import { existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { traceFsyncsOf } from "./fsyncs.mjs";
import { benchPostgres, postgresCostPerDelivery } from "./postgres.mjs";
import { cpuPerUnit, round, runtimeCpuMs, runtimePid, shown } from "./runtime-cpu.mjs";
import { runWrk } from "./wrk.mjs";

const { LocalInbox, ROOT, configWithoutConsumer, waitFor } = await import("../test/e2e/harness.mjs");
const { paymentEvent, stripeDeliveryByHmac } = await import("../test/e2e/signers.mjs");

export const CONNECTIONS = 16;
export const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
export const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const END_TO_END_DELIVERIES = Number(process.env.BENCH_DELIVERIES ?? 2_000);
const FSYNC_DELIVERIES = Number(process.env.BENCH_FSYNC_DELIVERIES ?? 300);
const STRIPE_SECRET = "whsec_bench_secret";
const DISK_DIR = process.env.BENCH_STATE_DIR ?? tmpdir();

export const CONFIGURATIONS = [
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

/** Measures one configuration: its environment is set for the runtimes started meanwhile. */
export async function measureConfiguration(configuration, { postgres }) {
  process.env.TMPDIR = configuration.stateDir;
  if (configuration.observability === undefined) delete process.env.X_LOCAL_OBSERVABILITY;
  else process.env.X_LOCAL_OBSERVABILITY = configuration.observability;
  console.log(`\n${configuration.name}: state in ${configuration.stateDir}, X_LOCAL_OBSERVABILITY=${configuration.observability ?? "(wrangler's default)"}`);
  const rounds = await sideBySide();
  // The round with the median ratio stands for the run; all rounds are printed and kept.
  const median = [...rounds].sort((a, b) => a.ratio - b.ratio)[Math.floor(rounds.length / 2)];
  const alone = await ingestAlone();
  const e2e = await endToEnd(END_TO_END_DELIVERIES);
  const e2ePostgres = postgres ? await endToEnd(END_TO_END_DELIVERIES, { postgres: true }) : null;
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

export function printConfiguration(result) {
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
