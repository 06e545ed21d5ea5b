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
 *
 * - capacity: bytes stored per delivery in the local D1 on realistic payloads, and the deliveries
 *   per month one D1 database holds under the default retention (capacity.mjs); BENCH_CAPACITY=0
 *   leaves it out
 *
 * What each part measures lives in a file of its own: throughput.mjs (the loads and their runtime
 * CPU, runtime-cpu.mjs; fsyncs, fsyncs.mjs; Postgres, postgres.mjs), cost.mjs (operations counted
 * by meter.spec.ts and their list price), capacity.mjs and dashboard.mjs (the dashboard under
 * load). This file runs them in order, writes bench/results.json and prints the tables.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { measureCapacity, printCapacity } from "./capacity.mjs";
import { costPerMillion, meterOperations, printCost } from "./cost.mjs";
import { dashboardUnderLoad, FIXTURE_ROWS, printDashboard } from "./dashboard.mjs";
import { postgresBench } from "./postgres.mjs";
import { CONFIGURATIONS, CONNECTIONS, measureConfiguration, printConfiguration, ROUNDS, SECONDS } from "./throughput.mjs";
import { requireWrk } from "./wrk.mjs";

const ROOT = fileURLToPath(new URL("..", import.meta.url));

requireWrk();
const POSTGRES = postgresBench();
if (!POSTGRES.enabled) console.log(`end to end on Postgres left out: ${POSTGRES.reason}`);
const meter = meterOperations();
const cost = costPerMillion(meter);
// Bytes stored per delivery (bench/capacity.mjs), in an inbox of its own before the loads.
const capacity = process.env.BENCH_CAPACITY === "0" ? null : await measureCapacity();
const configurations = [];
// BENCH_CONFIGS="tuned" (names, comma-separated) measures only those.
const chosen = process.env.BENCH_CONFIGS?.split(",").map((name) => name.trim());
for (const configuration of CONFIGURATIONS.filter((each) => (chosen ? chosen.includes(each.name) : !each.ablation))) configurations.push(await measureConfiguration(configuration, { postgres: POSTGRES.enabled }));
// The dashboard under load (bench/dashboard.mjs), in the tuned configuration; BENCH_DASHBOARD=0 skips it.
let dashboard = null;
if (process.env.BENCH_DASHBOARD !== "0") {
  const tuned = CONFIGURATIONS.find((each) => each.name === "tuned");
  process.env.TMPDIR = tuned.stateDir;
  process.env.X_LOCAL_OBSERVABILITY = tuned.observability;
  console.log(`\ndashboard under load: ${FIXTURE_ROWS.toLocaleString("en")} stored deliveries, tuned configuration`);
  dashboard = await dashboardUnderLoad({ seconds: SECONDS, rounds: ROUNDS });
}
// Postgres end to end ÷ D1 end to end, same run and configuration (tuned stands for the run).
const postgresRatios = Object.fromEntries(
  configurations.filter((each) => each.endToEndPostgres).map((each) => [each.name, Math.round((each.endToEndPostgres.deliveriesPerSecond / each.endToEnd.deliveriesPerSecond) * 100) / 100]),
);
const postgres = Object.keys(postgresRatios).length > 0 ? { endToEndRatioToD1: postgresRatios.tuned ?? null, byConfiguration: postgresRatios } : null;
const results = { measuredAt: new Date().toISOString(), loadGenerator: "wrk", connections: CONNECTIONS, seconds: SECONDS, configurations, dashboard, operations: meter, cost, capacity, postgres };
writeFileSync(join(ROOT, "bench", "results.json"), `${JSON.stringify(results, null, 2)}\n`);

console.log(`\nwebhook-inbox benchmark (local runtime, one run, wrk -t2 -c${CONNECTIONS}, ${SECONDS} s loads)`);
for (const result of configurations) printConfiguration(result);
console.log(
  "\nruntime CPU ms each: CPU time of the workerd process that runs the worker (with its Durable Objects, local D1 and queue broker, on one thread) per request, or per delivery end to end; ingest includes the consumer's work meanwhile. On Postgres the database runs in a server of its own: its CPU is not in this column but in the Postgres line under the table.",
);
if (dashboard) printDashboard(dashboard);
printCost(meter, cost);
if (capacity) printCapacity(capacity);
if (postgres) console.log(`Postgres end to end ÷ D1 end to end: ${Object.entries(postgres.byConfiguration).map(([name, ratio]) => `${ratio} (${name})`).join(", ")}`);
console.log("written: bench/results.json");

// A failed request is not throughput: a run with any is reported as failed, whatever its ratios.
const failures = configurations
  .flatMap((result) => [...result.rounds.flatMap((each) => [each.baseline, each.ingest]), result.ingestAlone, result.endToEnd, ...(result.endToEndPostgres ? [result.endToEndPostgres] : [])])
  .reduce((sum, each) => sum + each.non2xx + (each.errors ?? 0) + (each.notDone ?? 0) + (each.postgres ? Math.abs(each.postgres.paymentsRows - each.done) : 0), 0);
if (failures > 0) {
  console.error(`\n${failures} requests failed (non-2xx, connection errors, deliveries not done end to end, or payments rows on Postgres not one per delivery done) during the measured loads: see bench/results.json`);
  process.exitCode = 1;
}
