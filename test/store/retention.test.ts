/**
 * Retention and the sweeper's queries through the store (D1 or Postgres), with small limits and fixed
 * times: what they delete, what they keep, how they bound a run, where body pruning's watermark
 * stops. Which index each walks and what it reads, in D1: d1/retention.test.ts; in Postgres:
 * test/store/postgres/sweep.test.ts.
 */
import { env } from "cloudflare:workers";
import { beforeEach, describe, expect, it } from "vitest";
import { sql } from "../../src/sql";
import { openStore } from "../../src/store";
import { count, deliveryRow, exec, recordDelivery, rows } from "../helpers/store-db";

const DAY = 86_400_000;
const NOW = Date.parse("2026-12-01T00:00:00.000Z");
/** Received long before both cutoffs below. */
const OLD = NOW - 40 * DAY;
const DELETE_BEFORE = NOW - 30 * DAY;
const CLEAR_BEFORE = NOW - 7 * DAY;
/** A cutoff before every row: that half of retention does nothing. */
const NEVER = 0;

type Status = "received" | "processing" | "done" | "failed";

const store = () => openStore(env);
const applyRetention = (deleteBeforeMs: number, clearBodiesBeforeMs: number, limit: number) => store().applyRetention(deleteBeforeMs, clearBodiesBeforeMs, limit);

/** Stores a delivery received at `receivedAtMs`, then puts it in `status` as processing would. */
async function seed(source: string, id: string, status: Status, receivedAtMs = OLD): Promise<void> {
  const body = new TextEncoder().encode(`{"id":"${id}","email":"someone@example.com"}`);
  await recordDelivery({ source, id, eventType: "test.event", body, receivedAtMs });
  await exec(sql`UPDATE deliveries SET status = ${status} WHERE source = ${source} AND id = ${id}`);
}

/** `count` deliveries in `status`, received one millisecond apart from `receivedAtMs` on. */
async function seedMany(source: string, count: number, status: Status, receivedAtMs = OLD): Promise<void> {
  for (let index = 0; index < count; index++) {
    await recordDelivery({ source, id: `${source}-${index}`, eventType: "test.event", body: new Uint8Array([123, 125]), receivedAtMs: receivedAtMs + index });
  }
  await exec(sql`UPDATE deliveries SET status = ${status} WHERE source = ${source}`);
}

async function idsOf(source: string): Promise<string[]> {
  return (await rows<{ id: string }>(sql`SELECT id FROM deliveries WHERE source = ${source} ORDER BY id`)).map((row) => row.id);
}

async function bodiesLeft(source: string): Promise<number> {
  return count(sql`SELECT COUNT(*) AS n FROM deliveries WHERE source = ${source} AND body IS NOT NULL`);
}

// Retention and the sweeper work across sources, so each test starts from an empty table, and
// body pruning from its first row (its watermark is in inbox_marks).
beforeEach(async () => {
  await exec(sql`DELETE FROM deliveries`, sql`DELETE FROM inbox_marks`);
});

describe("applyRetention", () => {
  it("deletes done and failed rows received before the cutoff, and keeps received and processing ones", async () => {
    for (const status of ["received", "processing", "done", "failed"] as const) await seed("keep-unfinished", status, status);
    await seed("keep-unfinished", "recent-done", "done", NOW - DAY);
    const result = await applyRetention(DELETE_BEFORE, NEVER, 100);
    expect(result).toEqual({ deleted: 2, bodiesCleared: 0 });
    expect(await idsOf("keep-unfinished")).toEqual(["processing", "received", "recent-done"]);
  });

  it("keeps a replayed delivery until its new run has settled, then deletes it", async () => {
    await seed("keep-replayed", "replayed", "failed");
    expect(await store().resetForReplay({ source: "keep-replayed", id: "replayed" }, ["failed"], NOW)).not.toBeNull();
    await applyRetention(DELETE_BEFORE, CLEAR_BEFORE, 100);
    expect(await deliveryRow("keep-replayed", "replayed")).toMatchObject({ status: "received", body: expect.anything() });
    await exec(sql`UPDATE deliveries SET status = 'done' WHERE source = 'keep-replayed'`);
    await applyRetention(DELETE_BEFORE, CLEAR_BEFORE, 100);
    expect(await deliveryRow("keep-replayed", "replayed")).toBeNull();
  });

  it("clears the bodies of done rows only: failed, received and processing rows keep theirs", async () => {
    // The done one first: pruning stops short of the oldest unfinished delivery (see below).
    await seed("bodies", "done", "done", OLD - 1_000);
    for (const status of ["received", "processing", "failed"] as const) await seed("bodies", status, status);
    await seed("bodies", "recent-done", "done", NOW - DAY);
    expect(await applyRetention(NEVER, CLEAR_BEFORE, 100)).toEqual({ deleted: 0, bodiesCleared: 1 });
    expect((await deliveryRow("bodies", "done"))?.body).toBeNull();
    for (const id of ["received", "processing", "failed", "recent-done"]) expect((await deliveryRow("bodies", id))?.body).not.toBeNull();
  });

  it("never clears the body of a failed delivery, however many runs pass", async () => {
    await seed("failed-body", "failed", "failed");
    const before = (await deliveryRow("failed-body", "failed"))!.body;
    for (let run = 0; run < 3; run++) await applyRetention(NEVER, NOW, 100);
    expect((await deliveryRow("failed-body", "failed"))!.body).toEqual(before);
  });

  it("deletes more rows than its limit over several runs, at most the limit per run", async () => {
    await seedMany("delete-limit", 7, "done");
    const deleted: number[] = [];
    const left: number[] = [];
    for (let run = 0; run < 4; run++) {
      deleted.push((await applyRetention(DELETE_BEFORE, NEVER, 3)).deleted);
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
      cleared.push((await applyRetention(DELETE_BEFORE, CLEAR_BEFORE, 3)).bodiesCleared);
      left.push(await bodiesLeft("clear-limit"));
    }
    expect(cleared).toEqual([3, 3, 1, 0]);
    expect(left).toEqual([4, 1, 0, 0]);
  });
});

describe("takeStranded", () => {
  it("re-enqueues more stranded deliveries than its limit over several runs, at most the limit per run", async () => {
    await seedMany("stranded-limit", 7, "received", NOW - 60 * 60_000);
    const cutoffs = { neverAttemptedBeforeMs: NOW - 60_000, retryWaitingBeforeMs: NOW - 60_000, processingBeforeMs: NOW - 60_000 };
    const taken: string[][] = [];
    for (let run = 0; run < 4; run++) {
      const refs = await store().takeStranded(cutoffs, NOW + run, 3);
      taken.push(refs.filter((ref) => ref.source === "stranded-limit").map((ref) => ref.id));
    }
    expect(taken.map((ids) => ids.length)).toEqual([3, 3, 1, 0]);
    expect(taken.flat().sort()).toEqual(await idsOf("stranded-limit"));
  });
});

describe("body pruning's watermark", () => {
  it("is not held up by a failed delivery replayed after the watermark passed it", async () => {
    await seed("replayed-old", "failed-then-replayed", "failed", NOW - 12 * DAY);
    await seedMany("early", 2, "done", NOW - 11 * DAY);
    expect((await applyRetention(NEVER, CLEAR_BEFORE, 100)).bodiesCleared).toBe(2);
    // As a replay leaves it: received, its fence raised (store/d1/replay.ts).
    await exec(sql`UPDATE deliveries SET status = 'received', lease_token = 1 WHERE source = 'replayed-old'`);
    await seedMany("later", 3, "done", NOW - 10 * DAY);
    expect((await applyRetention(NEVER, CLEAR_BEFORE, 100)).bodiesCleared).toBe(3);
    expect(await bodiesLeft("replayed-old")).toBe(1);
  });

  it("stops short of an unfinished delivery, and prunes it and what follows once it is done", async () => {
    await seedMany("before", 3, "done", NOW - 12 * DAY);
    await seed("stuck", "waiting", "received", NOW - 11 * DAY);
    await seedMany("after", 3, "done", NOW - 10 * DAY);
    expect((await applyRetention(NEVER, CLEAR_BEFORE, 100)).bodiesCleared).toBe(3);
    expect(await bodiesLeft("after")).toBe(3);
    await exec(sql`UPDATE deliveries SET status = 'done' WHERE source = 'stuck'`);
    expect((await applyRetention(NEVER, CLEAR_BEFORE, 100)).bodiesCleared).toBe(4);
    expect(await bodiesLeft("stuck")).toBe(0);
    expect(await bodiesLeft("after")).toBe(0);
  });
});
