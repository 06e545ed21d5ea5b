#!/usr/bin/env node
/**
 * `npm run bench`: throughput of the inbox against a no-op worker in the same local runtime,
 * measured in one run, side by side, with load from autocannon. Not a test: it asserts nothing
 * about time; it prints ratios and writes bench/results.json.
 *
 * - baseline: bench/noop (reads the body, answers 200), 16 connections
 * - ingest: Stripe-signed deliveries, unique ids with 10% repeats, 16 connections, while the
 *   queue consumer processes them as it would in production
 * - ingest alone: the same load on the same worker without the consumer (not part of the bar):
 *   in production the consumer runs in other isolates, here it shares the runtime's one thread,
 *   so the two rows together show what that sharing costs
 * - end to end: N deliveries from the first send until all are `done`
 */
import autocannon from "autocannon";
import { execFileSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";

// The runtimes' state is thrown away after the run. Keep it in RAM (/dev/shm) unless told
// otherwise: on this kind of VM every new Durable Object's SQLite file costs several fsyncs,
// which then dominate the figures (set BENCH_STATE_DIR=/tmp to measure with them).
process.env.TMPDIR = process.env.BENCH_STATE_DIR ?? (existsSync("/dev/shm") ? "/dev/shm" : process.env.TMPDIR);
// wrangler dev's local trace collector (X_LOCAL_OBSERVABILITY, on by default) receives the tail
// events of every invocation and stores them: each Durable Object call, queue batch and D1 query
// pays for it on the runtime's one thread, and production has no such thing. Off for the baseline and the
// inbox alike; X_LOCAL_OBSERVABILITY=true measures with it (≈ 7.5 instead of 5 ms of runtime CPU
// per delivery here).
process.env.X_LOCAL_OBSERVABILITY ??= "false";
const { LocalInbox, ROOT, configWithoutConsumer, waitFor } = await import("../test/e2e/harness.mjs");
const { paymentEvent, stripeDeliveryByHmac } = await import("../test/e2e/signers.mjs");

const CONNECTIONS = 16;
const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const END_TO_END_DELIVERIES = Number(process.env.BENCH_DELIVERIES ?? 2_000);
const STRIPE_SECRET = "whsec_bench_secret";

/** A Stripe `payment_intent.succeeded` delivery (body and headers), signed by Stripe's scheme. */
function signedPayment(id) {
  const { body, headers } = stripeDeliveryByHmac(paymentEvent(id, 1999, "cus_bench"), STRIPE_SECRET);
  return { body, headers };
}

/** Fresh ids, with every 10th request repeating a recent one (a provider's retry). */
function deliveryStream(prefix) {
  let sent = 0;
  return () => {
    sent++;
    const id = sent % 10 === 0 ? `${prefix}_${Math.max(1, sent - 5)}` : `${prefix}_${sent}`;
    return signedPayment(id);
  };
}

function load(options) {
  return new Promise((resolve, reject) => {
    const instance = autocannon(options, (error, result) => (error ? reject(error) : resolve(result)));
    autocannon.track?.(instance, { renderProgressBar: false, renderResultsTable: false, renderLatencyTable: false });
  });
}

/**
 * CPU time (ms) used so far by the workerd process that runs the worker under test, or null where
 * /proc is not there. wrangler dev runs two workerd processes: a proxy that owns the public port,
 * and the runtime with the worker, its Durable Objects, local D1 and queue broker. All of those
 * share the runtime's one thread, so its CPU per delivery is what the inbox costs, whatever the
 * load generator and the proxy can push through.
 */
function runtimeCpuMs(inbox) {
  if (!existsSync("/proc/self/stat")) return null;
  const parentOf = new Map();
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      parentOf.set(Number(entry), { ppid: Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]), stat });
    } catch {
      // gone meanwhile
    }
  }
  const isDescendant = (pid) => {
    for (let at = pid; at > 1; at = parentOf.get(at)?.ppid ?? 0) if (at === inbox.child?.pid) return true;
    return false;
  };
  for (const [pid, { stat }] of parentOf) {
    if (!isDescendant(pid)) continue;
    let command;
    try {
      command = readFileSync(`/proc/${pid}/cmdline`, "utf8");
    } catch {
      continue;
    }
    if (!command.includes("workerd") || command.includes(`entry=127.0.0.1:${inbox.port}`)) continue;
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS;
  }
  return null;
}

const CLOCK_TICKS = existsSync("/proc/self/stat") ? Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).trim()) || 100 : 100;

/** Runs `work` and returns its result with the runtime's CPU ms per unit of work (`units(result)`). */
async function withRuntimeCpu(inbox, work, units) {
  const before = runtimeCpuMs(inbox);
  const result = await work();
  const after = runtimeCpuMs(inbox);
  return { result, cpuMsPerUnit: cpuPerUnit(before, after, units(result)) };
}

/** Runtime CPU ms per unit of work between two readings, or null where there are none. */
function cpuPerUnit(before, after, units) {
  return before === null || after === null ? null : round((after - before) / units);
}

function summarize(result) {
  return {
    requestsPerSecond: Math.round(result.requests.average),
    p50Ms: result.latency.p50,
    p99Ms: result.latency.p99,
    non2xx: result.non2xx,
    errors: result.errors,
  };
}

/** Signed Stripe deliveries from `next()` to the inbox, for `duration` seconds or `amount` requests. */
function loadDeliveries(inbox, next, limits) {
  return load({
    url: `${inbox.url}/webhooks/stripe`,
    method: "POST",
    connections: CONNECTIONS,
    ...limits,
    requests: [{ setupRequest: (request) => ({ ...request, ...next() }) }],
  });
}

/** One timed load on a started runtime: autocannon's summary and the runtime's CPU per request. */
async function measure(runtime, run) {
  const { result, cpuMsPerUnit } = await withRuntimeCpu(runtime, run, (done) => done.requests.total);
  return { ...summarize(result), runtimeCpuMsPerRequest: cpuMsPerUnit };
}

/** Waits until nothing is left for the consumer: a baseline measured while it drains would be slowed. */
async function drained(inbox) {
  const empty = async () => (await inbox.admin("/admin/stats")).json?.oldestWaitingSeconds === null;
  if (!(await waitFor(empty, { timeoutMs: 300_000, intervalMs: 500 }))) throw new Error("the inbox still had deliveries waiting after 5 minutes");
}

/**
 * Baseline and ingest, ROUNDS times in turn, both runtimes up all along: each ratio compares two
 * measurements taken a few seconds apart, so a slow patch of this shared VM shows as one odd round
 * instead of tilting the whole result. Each load is preceded by 2 s of the same load, so the
 * ingest measurement starts with the consumer already at work, as under sustained traffic.
 */
async function sideBySide() {
  const noop = new LocalInbox({ config: join(ROOT, "bench", "noop", "wrangler.toml") });
  const inbox = new LocalInbox({ vars: { STRIPE_WEBHOOK_SECRET: STRIPE_SECRET } });
  try {
    await noop.start();
    await inbox.start();
    const { body, headers } = signedPayment("evt_noop");
    const noopLoad = (duration) => load({ url: `${noop.url}/webhooks/stripe`, method: "POST", body, headers, connections: CONNECTIONS, duration });
    const rounds = [];
    for (let index = 1; index <= ROUNDS; index++) {
      await drained(inbox);
      await noopLoad(2);
      const baseline = await measure(noop, () => noopLoad(SECONDS));
      await loadDeliveries(inbox, deliveryStream(`evt_warm${index}`), { duration: 2 });
      // Includes the consumer's work done meanwhile: locally it shares the runtime's thread.
      const ingest = await measure(inbox, () => loadDeliveries(inbox, deliveryStream(`evt_ingest${index}`), { duration: SECONDS }));
      rounds.push({ baseline, ingest, ratio: round(ingest.requestsPerSecond / baseline.requestsPerSecond) });
      console.log(`round ${index}/${ROUNDS}: baseline ${baseline.requestsPerSecond} req/s, ingest ${ingest.requestsPerSecond} req/s, ratio ${rounds.at(-1).ratio}`);
    }
    return rounds;
  } finally {
    await noop.stop();
    await inbox.stop();
  }
}

/** The receiver without a consumer (see configWithoutConsumer): not part of the bar, it shows what sharing the thread costs. */
async function ingestAlone() {
  const config = configWithoutConsumer();
  const inbox = new LocalInbox({ config: config.path, migrate: true, vars: { STRIPE_WEBHOOK_SECRET: STRIPE_SECRET } });
  try {
    await inbox.start();
    await loadDeliveries(inbox, deliveryStream("evt_alone_warm"), { duration: 2 });
    return await measure(inbox, () => loadDeliveries(inbox, deliveryStream("evt_alone"), { duration: SECONDS }));
  } finally {
    await inbox.stop();
    config.remove();
  }
}

async function endToEnd() {
  const inbox = new LocalInbox({ vars: { STRIPE_WEBHOOK_SECRET: STRIPE_SECRET } });
  try {
    await inbox.start();
    const ids = Array.from({ length: END_TO_END_DELIVERIES }, (_, index) => `evt_e2e_${index}`);
    let index = 0;
    const cpuBefore = runtimeCpuMs(inbox);
    const started = Date.now();
    const sent = await loadDeliveries(inbox, () => signedPayment(ids[index++ % ids.length]), { amount: ids.length });
    const answeredMs = Date.now() - started;
    let done = 0;
    const allDone = async () => (done = (await inbox.admin("/admin/stats")).json?.counts?.done ?? 0) >= ids.length;
    // Each poll is a full count over D1: poll gently, it competes with the work measured.
    await waitFor(allDone, { timeoutMs: 600_000, intervalMs: 250 });
    const allDoneMs = Date.now() - started;
    const cpuAfter = runtimeCpuMs(inbox);
    return {
      deliveries: ids.length,
      done,
      non2xx: sent.non2xx,
      answeredSeconds: answeredMs / 1000,
      allDoneSeconds: allDoneMs / 1000,
      deliveriesPerSecond: Math.round((done / allDoneMs) * 1000),
      runtimeCpuMsPerDelivery: cpuPerUnit(cpuBefore, cpuAfter, ids.length),
    };
  } finally {
    await inbox.stop();
  }
}

const round = (value) => Math.round(value * 100) / 100;
const shown = (value) => (value === null ? "n/a" : value);

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
    durableObjectRowsWritten: meter.leaseStorageWritesPerDelivery,
    queueOperations: perDelivery(meter.total.queueMessages) * 3,
  };
  const price = { workerRequests: 0.3, d1RowsRead: 0.001, d1RowsWritten: 1, durableObjectRequests: 0.15, durableObjectRowsWritten: 1, queueOperations: 0.4 };
  const dollars = Object.fromEntries(Object.entries(usage).map(([key, perOne]) => [key, round(perOne * price[key])]));
  return { perDelivery: Object.fromEntries(Object.entries(usage).map(([key, value]) => [key, round(value)])), dollarsPerMillionDeliveries: dollars, total: round(Object.values(dollars).reduce((a, b) => a + b, 0)) };
}

const meter = meterOperations();
const cost = costPerMillion(meter);
const rounds = await sideBySide();
// The round with the median ratio stands for the run; all rounds are printed and kept.
const { baseline: base, ingest: ours } = [...rounds].sort((a, b) => a.ratio - b.ratio)[Math.floor(rounds.length / 2)];
const alone = await ingestAlone();
const e2e = await endToEnd();
const ratios = {
  ingestVsBaseline: round(ours.requestsPerSecond / base.requestsPerSecond),
  ingestAloneVsBaseline: round(alone.requestsPerSecond / base.requestsPerSecond),
  endToEndVsBaseline: round(e2e.deliveriesPerSecond / base.requestsPerSecond),
  p99VsBaselineP99: round(ours.p99Ms / Math.max(1, base.p99Ms)),
};
const results = { measuredAt: new Date().toISOString(), stateDir: process.env.TMPDIR, localObservability: process.env.X_LOCAL_OBSERVABILITY, connections: CONNECTIONS, seconds: SECONDS, rounds, baseline: base, ingest: ours, ingestAlone: alone, endToEnd: e2e, ratios, operations: meter, cost };
writeFileSync(join(ROOT, "bench", "results.json"), `${JSON.stringify(results, null, 2)}\n`);

console.log(
  `\nwebhook-inbox benchmark (local runtime, one run, ${CONNECTIONS} connections, ${SECONDS} s loads, state in ${process.env.TMPDIR}, X_LOCAL_OBSERVABILITY=${process.env.X_LOCAL_OBSERVABILITY})`,
);
console.log(`baseline and ingest: the median of ${rounds.length} rounds by ratio; the rounds' ratios: ${rounds.map((each) => each.ratio).join(", ")}\n`);
console.table({
  "baseline (no-op worker)": { "req/s": base.requestsPerSecond, "p50 ms": base.p50Ms, "p99 ms": base.p99Ms, non2xx: base.non2xx, "runtime CPU ms each": shown(base.runtimeCpuMsPerRequest) },
  "ingest (verify + D1 + queue)": { "req/s": ours.requestsPerSecond, "p50 ms": ours.p50Ms, "p99 ms": ours.p99Ms, non2xx: ours.non2xx, "runtime CPU ms each": shown(ours.runtimeCpuMsPerRequest) },
  "ingest alone (no consumer)": { "req/s": alone.requestsPerSecond, "p50 ms": alone.p50Ms, "p99 ms": alone.p99Ms, non2xx: alone.non2xx, "runtime CPU ms each": shown(alone.runtimeCpuMsPerRequest) },
  "end to end (until done)": { "req/s": e2e.deliveriesPerSecond, "p50 ms": "", "p99 ms": "", non2xx: e2e.non2xx, "runtime CPU ms each": shown(e2e.runtimeCpuMsPerDelivery) },
});
console.log(
  `ingest ÷ baseline = ${ratios.ingestVsBaseline}   end to end ÷ baseline = ${ratios.endToEndVsBaseline}   p99 ÷ baseline p99 = ${ratios.p99VsBaselineP99}`,
);
console.log(
  `ingest alone ÷ baseline = ${ratios.ingestAloneVsBaseline} (not part of the bar: the consumer runs in other isolates in production, here it shares the runtime's thread)`,
);
console.log(
  "runtime CPU ms each: CPU time of the workerd process that runs the worker (with its Durable Objects, local D1 and queue broker, on one thread) per request, or per delivery end to end; ingest includes the consumer's work meanwhile.",
);
console.log(`\nbillable operations per delivery (measured over ${meter.deliveries} deliveries, 10% sent twice) and cost per million deliveries at list prices:`);
console.table(
  Object.fromEntries(
    Object.keys(cost.perDelivery).map((key) => [key, { "per delivery": cost.perDelivery[key], "$ per million deliveries": cost.dollarsPerMillionDeliveries[key] }]),
  ),
);
console.log(`total ≈ $${cost.total} per million deliveries (free allowances, CPU time and Durable Object duration not included)`);
console.log("written: bench/results.json");

// A failed request is not throughput: a run with any is reported as failed, whatever its ratios.
const failures = [...rounds.flatMap((each) => [each.baseline, each.ingest]), alone, e2e].reduce((sum, each) => sum + each.non2xx + (each.errors ?? 0), 0);
if (failures > 0) {
  console.error(`\n${failures} requests failed (non-2xx or connection errors) during the measured loads: see bench/results.json`);
  process.exitCode = 1;
}
