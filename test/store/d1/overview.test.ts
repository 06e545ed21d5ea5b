/**
 * D1's overview (store/d1/overview.ts) from the inside: its counting walk in small stretches, several
 * walks over one stretch at once, and what its statements read (EXPLAIN QUERY PLAN, rows read): none
 * of it reads the deliveries table as a whole. The overview's numbers through the store, on both
 * stores: test/store/overview.test.ts; Postgres's walk and costs: test/store/postgres/overview.test.ts.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { deliveryStats } from "../../../src/store/d1/admin";
import { resetForReplay } from "../../../src/store/d1/replay";
import { markDone, markTakeover, recordResult } from "../../../src/store/d1/lifecycle";
import { advanceCounts, COUNT_LAG_MS, COUNT_SQL, LIVE_ROWS_SQL, OVERVIEW_MAX_AGE_MS, OVERVIEW_SQL, readOverview, refreshOverview } from "../../../src/store/d1/overview";
import { insertDelivery } from "../../../src/store/d1/record";
import { takeUntouched } from "../../../src/store/d1/fresh";
import { applyRetention, RETENTION_SQL } from "../../../src/store/d1/sweep";

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const body = new TextEncoder().encode("{}");

type Fate = "done" | "unhandled" | "failed" | "received" | "processing";

/** Stores a delivery received at `atMs` and moves it to `fate` as processing would. */
async function seed(source: string, id: string, atMs: number, fate: Fate): Promise<void> {
  const ref = { source, id };
  await insertDelivery(env.DB, { ...ref, eventType: "test.event", body, receivedAtMs: atMs }).run();
  const token = atMs + 1;
  if (fate === "done" || fate === "unhandled") await markDone(env.DB, ref, token, fate === "done", atMs + 10).run();
  if (fate === "failed") expect(await recordResult(env.DB, ref, token, { kind: "failed", error: "boom" }, atMs + 10)).toBe(1);
  if (fate === "processing") await markTakeover(env.DB, ref, token, 0, 5, atMs + 10).run();
}

/** The exact counts of these sources, from a full count of the table. */
async function exact(sources: readonly string[], nowMs: number) {
  const stats = await deliveryStats(env.DB, nowMs);
  return Object.fromEntries(sources.map((source) => [source, stats.bySource[source] ?? { received: 0, processing: 0, done: 0, failed: 0, filtered: 0 }]));
}

async function snapshotOf(sources: readonly string[], nowMs: number) {
  const overview = await refreshOverview(env.DB, nowMs);
  return Object.fromEntries(sources.map((source) => [source, overview.bySource[source] ?? { received: 0, processing: 0, done: 0, failed: 0, filtered: 0 }]));
}

describe("the walk", () => {
  it("equal an exact count, whether the rows were passed by the walk or not, after retention and a replay", async () => {
    const now = Date.now();
    const sources = ["ov-a", "ov-b"];
    const fates: Fate[] = ["done", "done", "unhandled", "failed", "received", "processing"];
    for (const [index, fate] of fates.entries()) {
      await seed("ov-a", `old-${index}`, now - 40 * DAY + index, fate);
      await seed("ov-b", `old-${index}`, now - 2 * HOUR + index, fate);
      await seed("ov-b", `new-${index}`, now - 1_000 + index, fate);
    }
    // Nothing walked yet: all of it is counted past the mark.
    expect(await snapshotOf(sources, now)).toEqual(await exact(sources, now));
    // The walk passes the old rows (the newest stay past the mark, COUNT_LAG_MS), in small stretches.
    while ((await advanceCounts(env.DB, now, 4)) !== null && (await env.DB.prepare("SELECT value FROM inbox_marks WHERE name = 'counted_through'").first<{ value: string }>())!.value < new Date(now - COUNT_LAG_MS).toISOString());
    expect(await snapshotOf(sources, now)).toEqual(await exact(sources, now));
    // Walking again counts nothing twice.
    expect(await advanceCounts(env.DB, now)).toBeNull();
    expect(await snapshotOf(sources, now)).toEqual(await exact(sources, now));

    // Retention deletes the settled rows of 40 days ago (counted ones): the totals lose them.
    const { deleted } = await applyRetention(env.DB, now - 30 * DAY, now - 365 * DAY, 1_000);
    expect(deleted).toBeGreaterThanOrEqual(4);
    expect((await exact(sources, now))["ov-a"]).toEqual({ received: 1, processing: 1, done: 0, failed: 0, filtered: 0 });
    expect(await snapshotOf(sources, now)).toEqual(await exact(sources, now));

    // A replay of a failed delivery behind the mark: failed → received, nothing else moves.
    expect(await resetForReplay(env.DB, { source: "ov-b", id: "old-3" }, ["failed"], now)).not.toBeNull();
    expect(await snapshotOf(sources, now)).toEqual(await exact(sources, now));
    const overview = await refreshOverview(env.DB, now);
    const unhandled = await env.DB.prepare("SELECT COUNT(*) AS n FROM deliveries WHERE status = 'done' AND handled = 0").first<{ n: number }>();
    expect(overview.unhandled).toBe(unhandled!.n);
  });

  it("counts a stretch once when several sweeps walk it at the same moment", async () => {
    const now = Date.now() + 10 * DAY;
    for (let index = 0; index < 12; index++) await seed("ov-race", `r-${index}`, now - DAY + index, "done");
    // Three walks at once over a stretch they have not passed yet, in small steps, until done.
    const walk = async () => {
      while ((await advanceCounts(env.DB, now, 2)) !== null);
    };
    await Promise.all([walk(), walk(), walk()]);
    expect((await snapshotOf(["ov-race"], now))["ov-race"]).toEqual({ received: 0, processing: 0, done: 12, failed: 0, filtered: 0 });
    const counted = await env.DB.prepare("SELECT total FROM inbox_counts WHERE source = 'ov-race'").first<{ total: number }>();
    expect(counted!.total).toBe(12);
  });
});

describe("the overview's cost", () => {
  it("reads an index or a small table for each of its statements, never the deliveries table as a whole", async () => {
    for (const sql of Object.values(OVERVIEW_SQL)) {
      const params = sql.includes("?1") ? ["2026-01-01T00"] : [];
      const { results } = await env.DB.prepare(`EXPLAIN QUERY PLAN ${sql}`)
        .bind(...params)
        .all<{ detail: string }>();
      const onDeliveries = results.map((row) => row.detail).filter((detail) => /\bdeliveries\b/.test(detail));
      for (const line of onDeliveries) expect(line, sql).toMatch(/USING (COVERING )?INDEX/);
      // The rows past the mark are a range of the age index, not the whole of it.
      if (sql.includes("deliveries_by_age")) expect(onDeliveries.join("\n"), sql).toMatch(/SEARCH deliveries USING (COVERING )?INDEX deliveries_by_age \(received_at>\?\)/);
    }
  });

  it("walks and uncounts through the age index: the walk's statements and retention's uncount", async () => {
    const plans = [...Object.values(COUNT_SQL), RETENTION_SQL.uncountDeleted].map(async (sql) => {
      const params = (sql.match(/\?\d/g) ?? []).length > 0 ? ["2026-01-01T00:00:00.000Z", "2026-01-02T00:00:00.000Z", 10] : [];
      const count = new Set(sql.match(/\?\d/g) ?? []).size;
      const { results } = await env.DB.prepare(`EXPLAIN QUERY PLAN ${sql}`)
        .bind(...params.slice(0, count))
        .all<{ detail: string }>();
      return { sql, lines: results.map((row) => row.detail) };
    });
    for (const { sql, lines } of await Promise.all(plans)) {
      expect(lines.filter((line) => /^SCAN deliveries( |$)/.test(line) && !/INDEX/.test(line)), sql).toEqual([]);
    }
  });

  it("reads about as many rows with 5,000 settled deliveries behind the mark, unhandled ones included, as with none", async () => {
    const now = Date.parse("2033-01-01T00:00:00.000Z");
    const rowsRead = async () => {
      const results = await env.DB.batch(
        Object.values(OVERVIEW_SQL).map((sql) => (sql.includes("?1") ? env.DB.prepare(sql).bind("2032-12-31T00") : env.DB.prepare(sql))),
      );
      return results.reduce((sum, result) => sum + result.meta.rows_read, 0);
    };
    await advanceCounts(env.DB, now);
    const idle = await rowsRead();
    // 5,000 done deliveries received after that, inserted in bulk, then passed by the walk an hour later.
    await env.DB.prepare(
      `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 5000)
       INSERT INTO deliveries (source, id, status, attempts, handled, body, received_at, updated_at)
       SELECT 'ov-bulk', 'd-' || i, 'received', 0, NULL, x'7b7d', '2033-01-01T00:10:00.000Z', '2033-01-01T00:10:00.000Z' FROM n`,
    ).run();
    // Marked done, most of them unhandled, as where the providers send many events no handler takes.
    await env.DB.prepare("UPDATE deliveries SET status = 'done', attempts = 1, handled = (id <= 'd-2'), commit_token = 1, lease_token = 1 WHERE source = 'ov-bulk'").run();
    expect(await advanceCounts(env.DB, now + HOUR)).not.toBeNull();
    // The sweep that moved the count also walked past them looking for untouched rows (store/d1/fresh.ts).
    await takeUntouched(env.DB, new Date(now + HOUR - 60_000).toISOString(), new Date(now + HOUR).toISOString(), 500);
    const overview = await refreshOverview(env.DB, now + HOUR);
    expect(overview.bySource["ov-bulk"]).toEqual({ received: 0, processing: 0, done: 5000, failed: 0, filtered: 0 });
    const unhandled = await env.DB.prepare("SELECT COUNT(*) AS n FROM deliveries WHERE status = 'done' AND handled = 0").first<{ n: number }>();
    expect(unhandled!.n).toBeGreaterThan(3000);
    expect(overview.unhandled).toBe(unhandled!.n);
    expect(await rowsRead()).toBeLessThan(idle + 50);
  });

  it("serves the stored snapshot for a minute once more rows than the live limit would be counted, then puts it together again", async () => {
    const now = Date.parse("2034-01-01T00:00:00.000Z");
    await refreshOverview(env.DB, now);
    // A live limit of 0 stands for an inbox under load: the rows past the mark exceed it.
    const before = (await readOverview(env.DB, now + 1_000, 0)).counts.done;
    const ref = { source: "ov-cache", id: "x" };
    await insertDelivery(env.DB, { ...ref, eventType: null, body: new Uint8Array([123, 125]), receivedAtMs: now - DAY }).run();
    expect((await markDone(env.DB, ref, now, true, now).run()).meta.changes).toBe(1);
    expect((await readOverview(env.DB, now + OVERVIEW_MAX_AGE_MS - 1, 0)).counts.done).toBe(before);
    const later = await readOverview(env.DB, now + OVERVIEW_MAX_AGE_MS, 0);
    expect(later.counts.done).toBe(before + 1);
    expect(later.asOf).toBe(new Date(now + OVERVIEW_MAX_AGE_MS).toISOString());
    // With the default limit (few rows to count here) it is put together on every read.
    expect((await readOverview(env.DB, now + OVERVIEW_MAX_AGE_MS + 1)).asOf).toBe(new Date(now + OVERVIEW_MAX_AGE_MS + 1).toISOString());
  });

  it("decides whether to count live from the indexes, each part bounded by the limit", async () => {
    const { results } = await env.DB.prepare(`EXPLAIN QUERY PLAN ${LIVE_ROWS_SQL}`).bind(10).all<{ detail: string }>();
    const lines = results.map((row) => row.detail);
    expect(lines.filter((line) => /^SCAN deliveries( |$)/.test(line) && !/INDEX/.test(line))).toEqual([]);
    for (const index of ["deliveries_by_age", "deliveries_waiting", "deliveries_failed", "deliveries_filtered"]) expect(lines.join("\n")).toContain(index);
  });
});
