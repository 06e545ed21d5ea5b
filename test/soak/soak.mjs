#!/usr/bin/env node
/**
 * `npm run soak`: minutes of steady, signed load on the real local runtime while it is SIGKILLed
 * every 30–60 s and restarted (and, on Postgres, the database server crashed once), then every
 * event must be stored once, done once, paid once, none failed, all settled within 90 s of the
 * last restart (run.mjs, checks.mjs; docs/soak.md). Not part of CI or `npm test`.
 *
 *   npm run soak                          both stores in turn, 4 minutes each
 *   npm run soak -- --store d1            one store (d1 | postgres)
 *   npm run soak -- --minutes 2           or SOAK_MINUTES=2
 *   npm run soak -- --rate 5 --twice 0.2  events per second (SOAK_RATE), share sent twice at once (SOAK_TWICE)
 *
 * Exits 1 when an assertion fails, 2 on a usage error, 130 on Ctrl-C; whatever it started
 * (wrangler, workerd, postgres) is stopped on every way out.
 */
import { parseArgs } from "node:util";
import { soakStore } from "./run.mjs";

const STORES = ["d1", "postgres"];

const { values } = parseArgs({
  options: {
    store: { type: "string" },
    minutes: { type: "string" },
    rate: { type: "string" },
    twice: { type: "string" },
  },
});
const options = {
  stores: values.store ? [values.store] : STORES,
  minutes: Number(values.minutes ?? process.env.SOAK_MINUTES ?? 4),
  rate: Number(values.rate ?? process.env.SOAK_RATE ?? 5),
  twiceShare: Number(values.twice ?? process.env.SOAK_TWICE ?? 0.2),
};
const usage = [
  !options.stores.every((store) => STORES.includes(store)) && `--store is one of ${STORES.join(", ")}`,
  !(options.minutes > 0 && options.minutes <= 60) && "--minutes is a number in (0, 60]",
  !(options.rate > 0 && options.rate <= 50) && "--rate is a number of events per second in (0, 50]: the soak stays well below capacity",
  !(options.twiceShare >= 0 && options.twiceShare <= 1) && "--twice is a share in [0, 1]",
].filter(Boolean);
if (usage.length) {
  console.error(usage.join("\n"));
  process.exit(2);
}

/** What runs now, to stop on Ctrl-C and on any exit. */
let running = {};
const stopNow = () => {
  const group = running.inbox?.child?.pid;
  if (group) {
    try {
      process.kill(-group, "SIGKILL");
    } catch {
      // already gone
    }
  }
  running.postgres?.stopNow();
};
process.on("exit", stopNow);
for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"]) {
  process.once(signal, async () => {
    console.error(`\n${signal}: stopping what the soak started`);
    const { inbox, postgres } = running;
    running = {};
    await inbox?.stop().catch(() => {});
    await postgres?.stop().catch(() => postgres.stopNow());
    process.exit(130);
  });
}

const results = [];
for (const store of options.stores) {
  console.log(`\n=== soak on ${store}: ${options.minutes} min, ${options.rate} events/s, ${Math.round(options.twiceShare * 100)}% sent twice at once ===`);
  try {
    results.push(await soakStore({ store, ...options, track: (resources) => (running = resources) }));
  } catch (error) {
    results.push({ store, figures: {}, failures: [`the soak itself broke: ${/** @type {Error} */ (error).stack ?? error}`] });
  }
}

for (const { store, figures, failures } of results) {
  console.log(`\n=== ${store}: ${failures.length ? "FAILED" : "passed"} ===`);
  for (const [name, value] of Object.entries(figures)) console.log(`  ${name}: ${typeof value === "object" ? JSON.stringify(value) : value}`);
  for (const failure of failures) console.log(`  ✗ ${failure}`);
}
// Exit now: nothing of the soak is left to wait for (and the exit handler stops anything that was).
process.exit(results.some((result) => result.failures.length) ? 1 : 0);
