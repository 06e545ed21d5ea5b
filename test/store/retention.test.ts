/**
 * Retention and the sweeper's queries, called directly with small limits and fixed times: what
 * they delete, what they keep, how they bound a run, and which index each walks.
 */
import { env } from "cloudflare:workers";
import { beforeEach, describe, expect, it } from "vitest";
import { resetForReplay } from "../../src/store/admin";
import { markDone } from "../../src/store/lifecycle";
import { insertDelivery } from "../../src/store/record";
import { applyRetention, RETENTION_SQL, takeStranded } from "../../src/store/sweep";
import { deliveryRow } from "../helpers/db";

const DAY = 86_400_000;
const NOW = Date.parse("2026-12-01T00:00:00.000Z");
/** Received long before both cutoffs below. */
const OLD = NOW - 40 * DAY;
const DELETE_BEFORE = NOW - 30 * DAY;
const CLEAR_BEFORE = NOW - 7 * DAY;
/** A cutoff before every row: that half of retention does nothing. */
const NEVER = 0;

type Status = "received" | "processing" | "done" | "failed";

/** Stores a delivery received at `receivedAtMs`, then puts it in `status` as processing would. */
async function seed(source: string, id: string, status: Status, receivedAtMs = OLD): Promise<void> {
  const body = new TextEncoder().encode(`{"id":"${id}","email":"someone@example.com"}`);
  await insertDelivery(env.DB, { source, id, eventType: "test.event", body, receivedAtMs }).run();
  await env.DB.prepare("UPDATE deliveries SET status = ?3 WHERE source = ?1 AND id = ?2").bind(source, id, status).run();
}

async function seedMany(source: string, count: number, status: Status, receivedAtMs = OLD): Promise<void> {
  const inserts = Array.from({ length: count }, (_, index) =>
    insertDelivery(env.DB, { source, id: `${source}-${index}`, eventType: "test.event", body: new Uint8Array([123, 125]), receivedAtMs }),
  );
  await env.DB.batch([...inserts, env.DB.prepare("UPDATE deliveries SET status = ?2 WHERE source = ?1").bind(source, status)]);
}

async function idsOf(source: string): Promise<string[]> {
  const { results } = await env.DB.prepare("SELECT id FROM deliveries WHERE source = ? ORDER BY id").bind(source).all<{ id: string }>();
  return results.map((row) => row.id);
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

// Retention and the sweeper work across sources, so each test starts from an empty table.
beforeEach(async () => {
  await env.DB.prepare("DELETE FROM deliveries").run();
});

describe("applyRetention", () => {
  it("deletes done and failed rows received before the cutoff, and keeps received and processing ones", async () => {
    for (const status of ["received", "processing", "done", "failed"] as const) await seed("keep-unfinished", status, status);
    await seed("keep-unfinished", "recent-done", "done", NOW - DAY);
    const result = await applyRetention(env.DB, DELETE_BEFORE, NEVER, 100);
    expect(result).toEqual({ deleted: 2, bodiesCleared: 0 });
    expect(await idsOf("keep-unfinished")).toEqual(["processing", "received", "recent-done"]);
  });

  it("keeps a replayed delivery until its new run has settled, then deletes it", async () => {
    await seed("keep-replayed", "replayed", "failed");
    expect(await resetForReplay(env.DB, { source: "keep-replayed", id: "replayed" }, ["failed"], NOW)).toBe(true);
    await applyRetention(env.DB, DELETE_BEFORE, CLEAR_BEFORE, 100);
    expect(await deliveryRow("keep-replayed", "replayed")).toMatchObject({ status: "received", body: expect.anything() });
    await env.DB.prepare("UPDATE deliveries SET status = 'done' WHERE source = 'keep-replayed'").run();
    await applyRetention(env.DB, DELETE_BEFORE, CLEAR_BEFORE, 100);
    expect(await deliveryRow("keep-replayed", "replayed")).toBeNull();
  });

  it("clears the bodies of done rows only: failed, received and processing rows keep theirs", async () => {
    for (const status of ["received", "processing", "done", "failed"] as const) await seed("bodies", status, status);
    await seed("bodies", "recent-done", "done", NOW - DAY);
    expect(await applyRetention(env.DB, NEVER, CLEAR_BEFORE, 100)).toEqual({ deleted: 0, bodiesCleared: 1 });
    expect((await deliveryRow("bodies", "done"))?.body).toBeNull();
    for (const id of ["received", "processing", "failed", "recent-done"]) expect((await deliveryRow("bodies", id))?.body).not.toBeNull();
  });

  it("never clears the body of a failed delivery, however many runs pass", async () => {
    await seed("failed-body", "failed", "failed");
    const before = (await deliveryRow("failed-body", "failed"))!.body;
    for (let run = 0; run < 3; run++) await applyRetention(env.DB, NEVER, NOW, 100);
    expect((await deliveryRow("failed-body", "failed"))!.body).toEqual(before);
  });

  it("deletes more rows than its limit over several runs, at most the limit per run", async () => {
    await seedMany("delete-limit", 7, "done");
    const deleted: number[] = [];
    const left: number[] = [];
    for (let run = 0; run < 4; run++) {
      deleted.push((await applyRetention(env.DB, DELETE_BEFORE, NEVER, 3)).deleted);
      left.push((await idsOf("delete-limit")).length);
    }
    expect(deleted).toEqual([3, 3, 1, 0]);
    expect(left).toEqual([4, 1, 0, 0]);
  });

  it("clears more bodies than its limit over several runs, at most the limit per run", async () => {
    await seedMany("clear-limit", 7, "done", NOW - 10 * DAY);
    const cleared: number[] = [];
    const left: number[] = [];
    for (let run = 0; run < 4; run++) {
      cleared.push((await applyRetention(env.DB, DELETE_BEFORE, CLEAR_BEFORE, 3)).bodiesCleared);
      left.push(await bodiesLeft("clear-limit"));
    }
    expect(cleared).toEqual([3, 3, 1, 0]);
    expect(left).toEqual([4, 1, 0, 0]);
  });
});

describe("the retention statements' cost", () => {
  it("find their rows through an index, never by scanning deliveries", async () => {
    const deletePlan = await planOf(RETENTION_SQL.deleteSettled, "2026-11-01T00:00:00.000Z", 1_000);
    const clearPlan = await planOf(RETENTION_SQL.clearBodies, "2026-11-24T00:00:00.000Z", 1_000);
    for (const plan of [deletePlan, clearPlan]) expect(plan.filter((line) => line.startsWith("SCAN"))).toEqual([]);
    expect(deletePlan).toContain("SEARCH deliveries USING COVERING INDEX deliveries_by_status_age (status=? AND received_at<?)");
    expect(clearPlan).toContain("SEARCH deliveries USING INDEX deliveries_done_with_body (received_at<?)");
  });

  it("read none of the bodies pruned before on the next run", async () => {
    const clearBodies = () => env.DB.prepare(RETENTION_SQL.clearBodies).bind(new Date(CLEAR_BEFORE).toISOString(), 1_000).run();
    // What a run reads when there is nothing to prune at all (the statement's fixed cost).
    await clearBodies();
    const idle = (await clearBodies()).meta.rows_read;
    await seedMany("pruned-once", 40, "done", NOW - 10 * DAY);
    expect((await clearBodies()).meta.changes).toBe(40);
    expect((await clearBodies()).meta.rows_read).toBe(idle);
  });

  it("read none of the unfinished rows that the delete keeps", async () => {
    const deleteSettled = () => env.DB.prepare(RETENTION_SQL.deleteSettled).bind(new Date(DELETE_BEFORE).toISOString(), 1_000).run();
    await deleteSettled();
    const idle = (await deleteSettled()).meta.rows_read;
    await seedMany("kept-unfinished", 20, "received");
    await seedMany("kept-processing", 20, "processing");
    const run = await deleteSettled();
    expect(run.meta.changes).toBe(0);
    expect(run.meta.rows_read).toBe(idle);
  });
});

describe("takeStranded", () => {
  it("re-enqueues more stranded deliveries than its limit over several runs, at most the limit per run", async () => {
    await seedMany("stranded-limit", 7, "received", NOW - 60 * 60_000);
    const cutoffs = { neverAttemptedBeforeMs: NOW - 60_000, retryWaitingBeforeMs: NOW - 60_000, processingBeforeMs: NOW - 60_000 };
    const taken: string[][] = [];
    for (let run = 0; run < 4; run++) {
      const refs = await takeStranded(env.DB, cutoffs, NOW + run, 3);
      taken.push(refs.filter((ref) => ref.source === "stranded-limit").map((ref) => ref.id));
    }
    expect(taken.map((ids) => ids.length)).toEqual([3, 3, 1, 0]);
    expect(taken.flat().sort()).toEqual(await idsOf("stranded-limit"));
  });
});

// Last in the file: it drops the partial index for a moment (each test file has its own D1).
describe("the partial index's write cost", () => {
  /** rows_written of one delivery's done transition and of clearing its body. */
  async function writesOf(id: string, clearBodiesSql: string): Promise<{ done: number; clear: number }> {
    const ref = { source: "write-cost", id };
    await insertDelivery(env.DB, { ...ref, eventType: "test.event", body: new Uint8Array([123, 125]), receivedAtMs: OLD }).run();
    await env.DB.prepare("UPDATE deliveries SET status = 'processing', lease_token = 7 WHERE source = ?1 AND id = ?2").bind(ref.source, ref.id).run();
    const done = await markDone(env.DB, ref, 7, true, NOW).run();
    const clear = await env.DB.prepare(clearBodiesSql).bind(new Date(NOW).toISOString(), 1_000).run();
    expect(clear.meta.changes).toBe(1);
    return { done: done.meta.rows_written, clear: clear.meta.rows_written };
  }

  it("is one row written more when a delivery becomes done, and nothing more to clear its body", async () => {
    const withIndex = await writesOf("with-index", RETENTION_SQL.clearBodies);
    const migration = env.TEST_MIGRATIONS.find((candidate) => candidate.name.startsWith("0005_"))!;
    const createIndex = migration.queries.find((query) => query.includes("deliveries_done_with_body"))!;
    await env.DB.prepare("DROP INDEX deliveries_done_with_body").run();
    try {
      // The statement as it was before the index (without INDEXED BY, which needs it).
      const withoutIndex = await writesOf("without-index", RETENTION_SQL.clearBodies.replace(" INDEXED BY deliveries_done_with_body", ""));
      expect(withIndex.done - withoutIndex.done).toBe(1);
      expect(withIndex.clear - withoutIndex.clear).toBe(0);
    } finally {
      await env.DB.prepare(createIndex).run();
    }
  });
});
