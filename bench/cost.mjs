/**
 * The cost side of `npm run bench`: one delivery's billable operations, counted in workerd by
 * bench/meter.spec.ts, and their price per million deliveries at Cloudflare's list prices.
 */
import { execFileSync } from "node:child_process";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { round } from "./runtime-cpu.mjs";

const ROOT = fileURLToPath(new URL("..", import.meta.url));

/** Counts one delivery's billable operations with bench/meter.spec.ts (run in workerd by vitest). */
export function meterOperations() {
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
export function costPerMillion(meter) {
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

/** Prints the meter's counts per delivery and the cost per million deliveries. */
export function printCost(meter, cost) {
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
}
