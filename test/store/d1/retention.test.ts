/**
 * D1's retention statements (store/d1/sweep.ts) from the inside: which index each walks (EXPLAIN QUERY
 * PLAN) and how many rows it reads (D1's rows_read), so that a run costs what is old enough, not
 * the table. Retention's behaviour on both stores: test/store/retention.test.ts; Postgres's statements:
 * test/store/postgres/sweep.test.ts.
 */
import { env } from "cloudflare:workers";
import { beforeEach, describe, expect, it } from "vitest";
import { insertDelivery } from "../../../src/store/d1/record";
import { applyRetention, RETENTION_SQL } from "../../../src/store/d1/sweep";

const DAY = 86_400_000;
const NOW = Date.parse("2026-12-01T00:00:00.000Z");
const DELETE_BEFORE = NOW - 30 * DAY;
const CLEAR_BEFORE = NOW - 7 * DAY;
/** A cutoff before every row: that half of retention does nothing. */
const NEVER = 0;

/** `count` done deliveries, received one millisecond apart from `receivedAtMs` on. */
async function seedMany(source: string, count: number, status: "done", receivedAtMs: number): Promise<void> {
  const inserts = Array.from({ length: count }, (_, index) =>
    insertDelivery(env.DB, { source, id: `${source}-${index}`, eventType: "test.event", body: new Uint8Array([123, 125]), receivedAtMs: receivedAtMs + index }),
  );
  await env.DB.batch([...inserts, env.DB.prepare("UPDATE deliveries SET status = ?2 WHERE source = ?1").bind(source, status)]);
}

async function bodiesLeft(source: string): Promise<number> {
  const row = await env.DB.prepare("SELECT COUNT(*) AS n FROM deliveries WHERE source = ? AND body IS NOT NULL").bind(source).first<{ n: number }>();
  return row!.n;
}

/** The `detail` lines of a statement's query plan. */
async function planOf(sql: string, ...params: unknown[]): Promise<string[]> {
  const { results } = await env.DB.prepare(`EXPLAIN QUERY PLAN ${sql}`).bind(...params).all<{ detail: string }>();
  return results.map((row) => row.detail);
}

// Each test starts from an empty table, and body pruning from its first row (its watermark is in inbox_marks).
beforeEach(async () => {
  await env.DB.batch([env.DB.prepare("DELETE FROM deliveries"), env.DB.prepare("DELETE FROM inbox_marks")]);
});

describe("the retention statements' cost", () => {
  it("find their rows through the age index, never by scanning deliveries", async () => {
    const plans = await Promise.all(
      [RETENTION_SQL.deleteSettled, RETENTION_SQL.clearBodies, RETENTION_SQL.advancePruning].map((sql) => planOf(sql, "2026-11-24T00:00:00.000Z", 1_000)),
    );
    for (const plan of plans) expect(plan.filter((line) => line.startsWith("SCAN deliveries"))).toEqual([]);
    expect(plans[0]).toContain("SEARCH deliveries USING INDEX deliveries_by_age (received_at<?)");
    expect(plans[1]).toContain("SEARCH deliveries USING INDEX deliveries_by_age (received_at>? AND received_at<?)");
  });

  it("read none of the bodies pruned before on the next run: pruning goes on from its watermark", async () => {
    const prune = () => applyRetention(env.DB, NEVER, CLEAR_BEFORE, 1_000);
    const rowsRead = async () => {
      const [cleared] = await env.DB.batch([
        env.DB.prepare(RETENTION_SQL.clearBodies).bind(new Date(CLEAR_BEFORE).toISOString(), 1_000),
        env.DB.prepare(RETENTION_SQL.advancePruning).bind(new Date(CLEAR_BEFORE).toISOString(), 1_000),
      ]);
      return cleared!.meta.rows_read;
    };
    // What a run reads when there is nothing to prune (the statement's fixed cost, the watermark included).
    await seedMany("pruned-first", 1, "done", NOW - 11 * DAY);
    expect((await prune()).bodiesCleared).toBe(1);
    const idle = await rowsRead();
    await seedMany("pruned-once", 40, "done", NOW - 10 * DAY);
    expect((await prune()).bodiesCleared).toBe(40);
    expect(await rowsRead()).toBe(idle);
    // Newer rows past the watermark are still found, once they are old enough.
    await seedMany("pruned-later", 5, "done", NOW - 9 * DAY);
    expect((await prune()).bodiesCleared).toBe(5);
    expect(await bodiesLeft("pruned-later")).toBe(0);
  });

  it("read only the rows older than the cutoff when deleting", async () => {
    const deleteSettled = () => env.DB.prepare(RETENTION_SQL.deleteSettled).bind(new Date(DELETE_BEFORE).toISOString(), 1_000).run();
    await deleteSettled();
    const idle = (await deleteSettled()).meta.rows_read;
    await seedMany("recent-settled", 30, "done", NOW - DAY);
    const run = await deleteSettled();
    expect(run.meta.changes).toBe(0);
    expect(run.meta.rows_read).toBe(idle);
  });
});
