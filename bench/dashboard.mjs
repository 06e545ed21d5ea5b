/**
 * The dashboard under load: does an overview left open (polled every 2 s) and a Prometheus scrape
 * (every 15 s) slow down ingest, with a million deliveries stored? D1 runs one query at a time per
 * database, so anything that counts the table per request would show here.
 *
 * The inbox starts on a fixture of FIXTURE_ROWS settled deliveries spread over the last six days
 * (0.2% failed, 40% unhandled: providers send events nobody handles), with the overview's counts
 * caught up as the sweeper's walk would leave them. Then rounds in turn, without and with the
 * pollers, each SECONDS of full-rate ingest with the consumer running (as `npm run bench`'s ingest
 * row), drained between rounds. Before each round with the pollers the stored snapshot is dropped,
 * so that the round includes a rebuild (at most one a minute otherwise); its latency is the first
 * poll's. Also timed: one `/admin/stats`, which still counts the whole table (its exact counts are
 * for scripts and tests, not for polling), for contrast.
 *
 * Run alone with `npm run bench:dashboard`; `npm run bench` runs it too (BENCH_DASHBOARD=0 skips it).
 */
import { performance } from "node:perf_hooks";
import { runWrk } from "./wrk.mjs";

const { LocalInbox, waitFor } = await import("../test/e2e/harness.mjs");
const { paymentEvent, stripeDeliveryByHmac } = await import("../test/e2e/signers.mjs");

export const FIXTURE_ROWS = Number(process.env.BENCH_FIXTURE_ROWS ?? 1_000_000);
const STRIPE_SECRET = "whsec_bench_secret";
const CONNECTIONS = 16;
const OVERVIEW_EVERY_MS = 2_000;
const SCRAPE_EVERY_MS = 15_000;
const round = (value) => Math.round(value * 100) / 100;

/**
 * The fixture: FIXTURE_ROWS deliveries received over six days until an hour ago, all finished, and
 * the marks the sweeper's walks would have left: the counts, and the walk of untouched rows past
 * them (store/d1/fresh.ts).
 */
function fixtureSql(nowMs) {
  const endSeconds = Math.floor(nowMs / 1000) - 3_600;
  const spanSeconds = 6 * 86_400;
  const spacing = spanSeconds / FIXTURE_ROWS;
  const at = `strftime('%Y-%m-%dT%H:%M:%fZ', ${endSeconds - spanSeconds} + i * ${spacing}, 'unixepoch')`;
  // Both walks have passed every fixture row.
  const marks = new Date(endSeconds * 1000 + 1).toISOString();
  return [
    `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ${FIXTURE_ROWS})
     INSERT INTO deliveries (source, id, event_type, status, attempts, handled, error, body, headers, received_at, updated_at)
     SELECT CASE i % 3 WHEN 0 THEN 'github' ELSE 'stripe' END, 'fx_' || i, 'payment_intent.succeeded',
            CASE WHEN i % 500 = 0 THEN 'failed' ELSE 'done' END, 1,
            CASE WHEN i % 500 = 0 THEN NULL WHEN i % 5 < 2 THEN 0 ELSE 1 END,
            CASE WHEN i % 500 = 0 THEN 'fixture: card_declined' END,
            x'7b2266697874757265223a317d', '[["content-type","application/json"]]', ${at}, ${at}
       FROM n`,
    "INSERT INTO inbox_counts (source, total, unhandled) SELECT source, COUNT(*), SUM(status = 'done' AND handled IS 0) FROM deliveries GROUP BY source",
    `INSERT INTO inbox_hours (hour, received) SELECT substr(received_at, 1, 13), COUNT(*) FROM deliveries WHERE received_at >= '${new Date(nowMs - 2 * 86_400_000).toISOString().slice(0, 13)}' GROUP BY 1`,
    `INSERT INTO inbox_marks (name, value) VALUES ('counted_through', '${marks}'), ('fresh_from', '${marks}')
       ON CONFLICT (name) DO UPDATE SET value = excluded.value`,
  ].join(";\n");
}

/** Signed Stripe deliveries for one round. */
function payments(prefix, count) {
  return Array.from({ length: count }, (_, index) => ({ path: "/webhooks/stripe", ...stripeDeliveryByHmac(paymentEvent(`${prefix}_${index}`, 1999, "cus_bench"), STRIPE_SECRET) }));
}

/** A session cookie for the dashboard (POST /ui/login), or null when the inbox has no dashboard. */
async function signIn(inbox) {
  const response = await fetch(`${inbox.url}/ui/login`, {
    method: "POST",
    redirect: "manual",
    headers: { "content-type": "application/x-www-form-urlencoded", origin: inbox.url },
    body: new URLSearchParams({ token: inbox.vars.ADMIN_TOKEN }),
  });
  const cookie = response.headers.getSetCookie?.().map((value) => value.split(";")[0]).join("; ");
  return response.status < 400 && cookie ? cookie : null;
}

/** Polls `path` every `everyMs` until stopped; keeps each answer's latency and status. */
function poller(url, everyMs, headers) {
  const latencies = [];
  let failures = 0;
  let firstMs = null;
  let running = true;
  const loop = (async () => {
    while (running) {
      const started = performance.now();
      try {
        const response = await fetch(url, { headers });
        await response.arrayBuffer();
        if (!response.ok) failures++;
      } catch {
        failures++;
      }
      latencies.push(performance.now() - started);
      firstMs ??= round(latencies[0]);
      await new Promise((resolve) => setTimeout(resolve, everyMs));
    }
  })();
  return {
    async stop() {
      running = false;
      await loop;
      const sorted = [...latencies].sort((a, b) => a - b);
      const at = (q) => round(sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0);
      return { requests: latencies.length, failures, firstMs, p50Ms: at(0.5), p99Ms: at(0.99) };
    },
  };
}

/** Waits until no delivery waits (read from /admin/metrics: the live oldest-waiting gauge). */
async function drained(inbox) {
  const waiting = async () => {
    const text = await (await fetch(`${inbox.url}/admin/metrics`, { headers: { authorization: `Bearer ${inbox.vars.ADMIN_TOKEN}` } })).text();
    return Number(/^webhook_inbox_oldest_waiting_seconds (\d+)/m.exec(text)?.[1] ?? "1") > 0;
  };
  await waitFor(async () => {
    // Twice, a second apart: a delivery enqueued meanwhile may not be waiting yet.
    if (await waiting()) return false;
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    return !(await waiting());
  }, { timeoutMs: 600_000, intervalMs: 500 });
}

/** Measures ingest without and with the dashboard's polling, `rounds` of each in turn. */
export async function dashboardUnderLoad({ seconds = 10, rounds = 3 } = {}) {
  const inbox = new LocalInbox({ vars: { STRIPE_WEBHOOK_SECRET: STRIPE_SECRET } });
  try {
    await inbox.start();
    await inbox.kill();
    const fixtureStarted = Date.now();
    await inbox.sql(fixtureSql(Date.now()));
    const fixtureSeconds = round((Date.now() - fixtureStarted) / 1000);
    await inbox.start();
    const auth = { authorization: `Bearer ${inbox.vars.ADMIN_TOKEN}` };
    const statsStarted = performance.now();
    const stats = await (await fetch(`${inbox.url}/admin/stats`, { headers: auth })).json();
    const statsMs = round(performance.now() - statsStarted);
    const cookie = await signIn(inbox);
    const overviewUrl = cookie ? `${inbox.url}/ui` : `${inbox.url}/admin/metrics`;
    const overviewHeaders = cookie ? { cookie } : auth;
    // Warm: the first overview puts the snapshot together.
    await fetch(overviewUrl, { headers: overviewHeaders });
    await runWrk({ url: inbox.url, requests: payments("evt_dash_warm", 3_000), seconds: 2, connections: CONNECTIONS });
    const results = { without: [], with: [] };
    let polls = null;
    for (let index = 1; index <= rounds; index++) {
      for (const mode of ["without", "with"]) {
        await drained(inbox);
        // A rebuild of the snapshot falls in this round: the first poll finds none stored.
        if (mode === "with") await inbox.sql("DELETE FROM inbox_marks WHERE name = 'overview'");
        const pollers = mode === "with" ? [poller(overviewUrl, OVERVIEW_EVERY_MS, overviewHeaders), poller(`${inbox.url}/admin/metrics`, SCRAPE_EVERY_MS, auth)] : [];
        const load = payments(`evt_dash_${mode}_${index}`, Math.max(2_000, seconds * 1_500));
        const measured = await runWrk({ url: inbox.url, requests: load, seconds, connections: CONNECTIONS });
        const polled = await Promise.all(pollers.map((each) => each.stop()));
        if (mode === "with") polls = { overview: polled[0], scrape: polled[1] };
        results[mode].push({ requestsPerSecond: measured.requestsPerSecond, p50Ms: measured.p50Ms, p99Ms: measured.p99Ms, failed: measured.non2xx + measured.errors, polls: mode === "with" ? polls : undefined });
        console.log(`  dashboard round ${index}/${rounds}, ${mode} polling: ingest ${measured.requestsPerSecond} req/s, p99 ${measured.p99Ms} ms${mode === "with" ? `; overview (${cookie ? "/ui" : "/admin/metrics"}) ${polls.overview.requests}×, the first (a rebuild) ${polls.overview.firstMs} ms, p50 ${polls.overview.p50Ms} ms p99 ${polls.overview.p99Ms} ms, ${polls.overview.failures} failed` : ""}`);
      }
    }
    const median = (list) => [...list].sort((a, b) => a.requestsPerSecond - b.requestsPerSecond)[Math.floor(list.length / 2)];
    const without = median(results.without);
    const withPolling = median(results.with);
    return {
      fixtureRows: FIXTURE_ROWS,
      fixtureSeconds,
      storedAtStart: Object.values(stats.counts ?? {}).reduce((a, b) => a + b, 0),
      adminStatsMs: statsMs,
      overviewPath: cookie ? "/ui" : "/admin/metrics",
      rounds: results,
      withoutPolling: without,
      withPolling,
      ratio: round(withPolling.requestsPerSecond / without.requestsPerSecond),
    };
  } finally {
    await inbox.stop();
  }
}

/** Prints what `dashboardUnderLoad` measured. */
export function printDashboard(result) {
  console.log(`\ndashboard under load (${result.fixtureRows.toLocaleString("en")} stored deliveries; the overview ${result.overviewPath} polled every ${OVERVIEW_EVERY_MS / 1000} s and /admin/metrics every ${SCRAPE_EVERY_MS / 1000} s; medians of ${result.rounds.without.length} rounds each)`);
  const polls = result.withPolling.polls;
  console.table({
    "ingest, consumer running, no polling": { "req/s": result.withoutPolling.requestsPerSecond, "p99 ms": result.withoutPolling.p99Ms, failed: result.withoutPolling.failed },
    "the same while the dashboard polls": { "req/s": result.withPolling.requestsPerSecond, "p99 ms": result.withPolling.p99Ms, failed: result.withPolling.failed },
  });
  console.log(
    `with ÷ without = ${result.ratio}; overview answers p50 ${polls.overview.p50Ms} ms, p99 ${polls.overview.p99Ms} ms, a rebuild of its snapshot ${polls.overview.firstMs} ms (${polls.overview.failures} failed); one /admin/stats (a full count) took ${result.adminStatsMs} ms; the fixture took ${result.fixtureSeconds} s to write`,
  );
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const result = await dashboardUnderLoad({ seconds: Number(process.env.BENCH_SECONDS ?? 10), rounds: Number(process.env.BENCH_ROUNDS ?? 3) });
  printDashboard(result);
}
