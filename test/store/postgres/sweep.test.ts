/**
 * Retention and the sweeper's queries of the Postgres store (src/store/postgres/sweep.ts), called
 * directly with small limits and fixed times, as test/store/retention.test.ts checks the D1 store:
 * what they delete, what they keep, how they bound a run, which index each walks; and, since
 * Postgres runs sweeps at the same moment, that two at once take disjoint rows.
 *
 * In a schema of its own, emptied before each test: retention and the stranded sweep work across
 * sources, and the body-pruning watermark is one for the whole table.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { advanceCounts } from "../../../src/store/postgres/overview";
import type { Queryable } from "../../../src/store/postgres/queryable";
import { resetForReplay } from "../../../src/store/postgres/replay";
import { applyRetention, RETENTION_SQL, takeStranded } from "../../../src/store/postgres/sweep";
import { privateSchema } from "../../helpers/postgres-schema";

const DAY = 86_400_000;
const NOW = Date.parse("2026-12-01T00:00:00.000Z");
/** Received long before both cutoffs below. */
const OLD = NOW - 40 * DAY;
const DELETE_BEFORE = NOW - 30 * DAY;
const CLEAR_BEFORE = NOW - 7 * DAY;
/** A cutoff before every row: that half of retention does nothing. */
const NEVER = 0;
const iso = (ms: number) => new Date(ms).toISOString();

/** A schema of this file's own (test/helpers/postgres-schema.ts): its tests move the inbox's global state. */
const db = privateSchema("sweep");
beforeEach(() => db((q) => q.query("DELETE FROM deliveries; DELETE FROM inbox_marks; DELETE FROM inbox_counts; DELETE FROM inbox_hours")));

type Status = "received" | "processing" | "done" | "failed";

/** `count` deliveries of `source` in `status`, received one millisecond apart from `receivedAtMs` on (ids `<source>-<n>`, or `id` for one). */
async function seed(source: string, status: Status, receivedAtMs = OLD, options: { count?: number; id?: string; attempts?: number; updatedAtMs?: number } = {}) {
  await db((q) =>
    q.query(
      `INSERT INTO deliveries (source, id, event_type, status, attempts, body, headers, received_at, updated_at)
       SELECT $1, CASE WHEN $2::text IS NULL THEN $1 || '-' || i ELSE $2 END, 'test.event', $3, $4, convert_to('{"email":"someone@example.com"}', 'UTF8'),
              '[["x-a","b"]]', to_char(timestamp 'epoch' + ($5::bigint + i) * interval '1 millisecond', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
              to_char(timestamp 'epoch' + coalesce($6::bigint, $5::bigint + i) * interval '1 millisecond', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')
         FROM generate_series(0, $7::int - 1) AS i`,
      [source, options.id ?? null, status, options.attempts ?? 0, receivedAtMs, options.updatedAtMs ?? null, options.count ?? 1],
    ),
  );
}

async function idsOf(source: string): Promise<string[]> {
  return db(async (q) => (await q.query<{ id: string }>("SELECT id FROM deliveries WHERE source = $1 ORDER BY id", [source])).rows.map((row) => row.id));
}

async function bodiesLeft(source: string): Promise<number> {
  return db(async (q) => (await q.query<{ n: number }>("SELECT count(*)::int AS n FROM deliveries WHERE source = $1 AND body IS NOT NULL", [source])).rows[0]!.n);
}

async function row(source: string, id: string) {
  return db(async (q) => (await q.query<{ status: string; body: Uint8Array | null; headers: unknown }>("SELECT status, body, headers FROM deliveries WHERE source = $1 AND id = $2", [source, id])).rows[0] ?? null);
}

const setStatus = (source: string, status: Status) => db((q) => q.query("UPDATE deliveries SET status = $2 WHERE source = $1", [source, status]));
const retain = (deleteBeforeMs: number, clearBeforeMs: number, limit: number) => db((q) => applyRetention(q, deleteBeforeMs, clearBeforeMs, limit));

describe("applyRetention", () => {
  it("deletes done and failed rows received before the cutoff, and keeps received and processing ones", async () => {
    for (const status of ["received", "processing", "done", "failed"] as const) await seed("keep-unfinished", status, OLD, { id: status });
    await seed("keep-unfinished", "done", NOW - DAY, { id: "recent-done" });
    expect(await retain(DELETE_BEFORE, NEVER, 100)).toEqual({ deleted: 2, bodiesCleared: 0 });
    expect(await idsOf("keep-unfinished")).toEqual(["processing", "received", "recent-done"]);
  });

  it("keeps a replayed delivery until its new run has settled, then deletes it", async () => {
    await seed("keep-replayed", "failed", OLD, { id: "replayed" });
    expect(await db((q) => resetForReplay(q, { source: "keep-replayed", id: "replayed" }, ["failed"], NOW))).not.toBeNull();
    await retain(DELETE_BEFORE, CLEAR_BEFORE, 100);
    expect(await row("keep-replayed", "replayed")).toMatchObject({ status: "received", body: expect.anything() });
    await setStatus("keep-replayed", "done");
    await retain(DELETE_BEFORE, CLEAR_BEFORE, 100);
    expect(await row("keep-replayed", "replayed")).toBeNull();
  });

  it("clears the bodies and headers of done rows only: failed, received and processing rows keep theirs", async () => {
    // The done one first: pruning stops short of the oldest unfinished delivery (see below).
    await seed("bodies", "done", OLD - 1_000, { id: "done" });
    for (const status of ["received", "processing", "failed"] as const) await seed("bodies", status, OLD, { id: status });
    await seed("bodies", "done", NOW - DAY, { id: "recent-done" });
    expect(await retain(NEVER, CLEAR_BEFORE, 100)).toEqual({ deleted: 0, bodiesCleared: 1 });
    expect(await row("bodies", "done")).toMatchObject({ body: null, headers: null });
    for (const id of ["received", "processing", "failed", "recent-done"]) expect((await row("bodies", id))!.body).not.toBeNull();
  });

  it("never clears the body of a failed delivery, however many runs pass", async () => {
    await seed("failed-body", "failed", OLD, { id: "failed" });
    for (let run = 0; run < 3; run++) await retain(NEVER, NOW, 100);
    expect(new TextDecoder().decode((await row("failed-body", "failed"))!.body!)).toBe('{"email":"someone@example.com"}');
  });

  it("deletes more rows than its limit over several runs, at most the limit per run", async () => {
    await seed("delete-limit", "done", OLD, { count: 7 });
    const deleted: number[] = [];
    const left: number[] = [];
    for (let run = 0; run < 4; run++) {
      deleted.push((await retain(DELETE_BEFORE, NEVER, 3)).deleted);
      left.push((await idsOf("delete-limit")).length);
    }
    expect(deleted).toEqual([3, 3, 1, 0]);
    expect(left).toEqual([4, 1, 0, 0]);
  });

  it("clears more bodies than its limit over several runs, at most the limit per run", async () => {
    await seed("clear-limit", "done", NOW - 10 * DAY, { count: 7 });
    const cleared: number[] = [];
    const left: number[] = [];
    for (let run = 0; run < 4; run++) {
      cleared.push((await retain(DELETE_BEFORE, CLEAR_BEFORE, 3)).bodiesCleared);
      left.push(await bodiesLeft("clear-limit"));
    }
    expect(cleared).toEqual([3, 3, 1, 0]);
    expect(left).toEqual([4, 1, 0, 0]);
  });

  it("takes what it deletes back from the overview's counts: the total of counted rows, and the unhandled", async () => {
    await seed("uncount", "received", OLD, { count: 5 });
    // Done as processing marks it: the fence passes, the count trigger counts the unhandled ones.
    await db((q) => q.query("UPDATE deliveries SET status = 'done', handled = (id <= 'uncount-1'), commit_token = 1, lease_token = 1 WHERE source = 'uncount'"));
    await seed("uncount", "done", NOW - 10 * DAY, { id: "recent" });
    while ((await db((q) => advanceCounts(q, NOW))) !== null);
    const counts = () => db(async (q) => (await q.query<{ total: string; unhandled: string }>("SELECT total, unhandled FROM inbox_counts WHERE source = 'uncount'")).rows[0]);
    expect(await counts()).toEqual({ total: "6", unhandled: "3" });
    expect((await retain(DELETE_BEFORE, NEVER, 100)).deleted).toBe(5);
    expect(await counts()).toEqual({ total: "1", unhandled: "0" });
  });

  it("takes disjoint rows when two runs go at the same moment, and each row out of the counts once", async () => {
    await seed("two-runs", "done", OLD, { count: 40 });
    while ((await db((q) => advanceCounts(q, NOW))) !== null);
    const results = await Promise.all([retain(DELETE_BEFORE, NEVER, 30), retain(DELETE_BEFORE, NEVER, 30), retain(DELETE_BEFORE, NEVER, 30)]);
    expect(results.reduce((sum, result) => sum + result.deleted, 0)).toBe(40);
    expect(await idsOf("two-runs")).toEqual([]);
    const total = await db(async (q) => (await q.query<{ total: string }>("SELECT total FROM inbox_counts WHERE source = 'two-runs'")).rows[0]!.total);
    expect(total).toBe("0");
  });

  it("clears each body once when two runs prune at the same moment", async () => {
    await seed("two-prunes", "done", NOW - 10 * DAY, { count: 20 });
    const results = await Promise.all([retain(NEVER, CLEAR_BEFORE, 100), retain(NEVER, CLEAR_BEFORE, 100)]);
    expect(results.reduce((sum, result) => sum + result.bodiesCleared, 0)).toBe(20);
    expect(await bodiesLeft("two-prunes")).toBe(0);
  });
});

describe("body pruning's watermark", () => {
  it("is not held up by a failed delivery replayed after the watermark passed it", async () => {
    await seed("replayed-old", "failed", NOW - 12 * DAY, { id: "failed-then-replayed" });
    await seed("early", "done", NOW - 11 * DAY, { count: 2 });
    expect((await retain(NEVER, CLEAR_BEFORE, 100)).bodiesCleared).toBe(2);
    await setStatus("replayed-old", "received");
    await seed("later", "done", NOW - 10 * DAY, { count: 3 });
    expect((await retain(NEVER, CLEAR_BEFORE, 100)).bodiesCleared).toBe(3);
    expect(await bodiesLeft("replayed-old")).toBe(1);
  });

  it("stops short of an unfinished delivery, and prunes it and what follows once it is done", async () => {
    await seed("before", "done", NOW - 12 * DAY, { count: 3 });
    await seed("stuck", "received", NOW - 11 * DAY, { id: "waiting" });
    await seed("after", "done", NOW - 10 * DAY, { count: 3 });
    expect((await retain(NEVER, CLEAR_BEFORE, 100)).bodiesCleared).toBe(3);
    expect(await bodiesLeft("after")).toBe(3);
    await setStatus("stuck", "done");
    expect((await retain(NEVER, CLEAR_BEFORE, 100)).bodiesCleared).toBe(4);
    expect(await bodiesLeft("stuck")).toBe(0);
    expect(await bodiesLeft("after")).toBe(0);
  });

  it("reads none of the bodies pruned before on the next run", async () => {
    /**
     * The rows of deliveries the pruning statement reads, from EXPLAIN ANALYZE in a transaction rolled
     * back; sequential scans priced out, as a table of this size would have the planner read it all.
     */
    const rowsRead = () =>
      db(async (q) => {
        await q.query("BEGIN");
        try {
          await q.query("SET LOCAL enable_seqscan = off");
          const { rows } = await q.query<{ "QUERY PLAN": { Plan: PlanNode }[] }>(`EXPLAIN (ANALYZE, FORMAT JSON) ${RETENTION_SQL.clearBodies}`, [iso(CLEAR_BEFORE), 1_000]);
          return nodesOf(rows[0]!["QUERY PLAN"][0]!.Plan)
            .filter((node) => node["Relation Name"] === "deliveries")
            .reduce((sum, node) => sum + node["Actual Rows"] * node["Actual Loops"] + (node["Rows Removed by Filter"] ?? 0), 0);
        } finally {
          await q.query("ROLLBACK");
        }
      });
    await seed("pruned-first", "done", NOW - 11 * DAY);
    expect((await retain(NEVER, CLEAR_BEFORE, 1_000)).bodiesCleared).toBe(1);
    const idle = await rowsRead();
    await seed("pruned-once", "done", NOW - 10 * DAY, { count: 40 });
    expect((await retain(NEVER, CLEAR_BEFORE, 1_000)).bodiesCleared).toBe(40);
    expect(await rowsRead()).toBe(idle);
    // Newer rows past the watermark are still found, once they are old enough.
    await seed("pruned-later", "done", NOW - 9 * DAY, { count: 5 });
    expect((await retain(NEVER, CLEAR_BEFORE, 1_000)).bodiesCleared).toBe(5);
    expect(await bodiesLeft("pruned-later")).toBe(0);
  });
});

interface PlanNode {
  "Node Type": string;
  "Relation Name"?: string;
  "Index Name"?: string;
  "Actual Rows": number;
  "Actual Loops": number;
  "Rows Removed by Filter"?: number;
  Plans?: PlanNode[];
}

function nodesOf(node: PlanNode): PlanNode[] {
  return [node, ...(node.Plans ?? []).flatMap(nodesOf)];
}

describe("the retention statements' cost", () => {
  it("find their rows through the age index, never by scanning deliveries", async () => {
    for (const [sql, params] of [
      [RETENTION_SQL.deleteSettled, [iso(DELETE_BEFORE), 1_000, ""]],
      [RETENTION_SQL.clearBodies, [iso(CLEAR_BEFORE), 1_000]],
    ] as const) {
      const plan = await db(async (q) => {
        await q.query("BEGIN");
        try {
          await q.query("SET LOCAL enable_seqscan = off");
          return (await q.query<{ "QUERY PLAN": string }>(`EXPLAIN ${sql}`, [...params])).rows.map((line) => line["QUERY PLAN"]).join("\n");
        } finally {
          await q.query("ROLLBACK");
        }
      });
      expect(plan, sql).not.toMatch(/Seq Scan on deliveries/);
      expect(plan, sql).toContain("deliveries_by_age");
    }
  });
});

describe("takeStranded", () => {
  const cutoffs = { neverAttemptedBeforeMs: NOW - 60_000, retryWaitingBeforeMs: NOW - 120_000, processingBeforeMs: NOW - 600_000 };
  const take = (nowMs: number, limit: number) => db((q) => takeStranded(q, cutoffs, nowMs, limit));

  it("takes received rows unchanged past their cutoff (never attempted, or waiting for a retry) and processing rows past theirs, and touches them", async () => {
    const at = NOW - 3_600_000;
    await seed("stranded", "received", at, { id: "lost-send", updatedAtMs: NOW - 61_000 });
    await seed("stranded", "received", at, { id: "fresh", updatedAtMs: NOW - 59_000 });
    await seed("stranded", "received", at, { id: "retry-due", attempts: 1, updatedAtMs: NOW - 121_000 });
    await seed("stranded", "received", at, { id: "retry-waiting", attempts: 1, updatedAtMs: NOW - 90_000 });
    await seed("stranded", "processing", at, { id: "abandoned", updatedAtMs: NOW - 601_000 });
    await seed("stranded", "processing", at, { id: "running", updatedAtMs: NOW - 300_000 });
    await seed("stranded", "failed", at, { id: "failed", updatedAtMs: NOW - 86_400_000 });
    const taken = await take(NOW, 100);
    expect(taken.map((ref) => ref.id).sort()).toEqual(["abandoned", "lost-send", "retry-due"]);
    const touched = await db(async (q) => (await q.query<{ id: string }>("SELECT id FROM deliveries WHERE updated_at = $1 ORDER BY id", [iso(NOW)])).rows.map((r) => r.id));
    expect(touched).toEqual(["abandoned", "lost-send", "retry-due"]);
    expect(await take(NOW + 1, 100)).toEqual([]);
  });

  it("re-enqueues more stranded deliveries than its limit over several runs, at most the limit per run", async () => {
    await seed("stranded-limit", "received", NOW - 3_600_000, { count: 7 });
    const taken: string[][] = [];
    for (let run = 0; run < 4; run++) taken.push((await take(NOW + run, 3)).map((ref) => ref.id));
    expect(taken.map((ids) => ids.length)).toEqual([3, 3, 1, 0]);
    expect(taken.flat().sort()).toEqual(await idsOf("stranded-limit"));
  });

  it("gives two sweeps at the same moment disjoint deliveries", async () => {
    await seed("stranded-race", "received", NOW - 3_600_000, { count: 30 });
    const runs = await Promise.all([take(NOW, 20), take(NOW, 20), take(NOW, 20)]);
    const ids = runs.flat().map((ref) => ref.id);
    expect(ids).toHaveLength(30);
    expect(new Set(ids).size).toBe(30);
  });
});
