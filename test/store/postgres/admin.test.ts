/**
 * The admin reads of the Postgres store (src/store/postgres/admin.ts) on a real Postgres: the exact
 * counts, and one delivery whole, in the shapes the D1 store gives (test/http/admin/stats.test.ts,
 * test/store/dashboard-data.test.ts). Fixture rows are plain SQL.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { deliveryStats, getDelivery } from "../../../src/store/postgres/admin";
import { withClient } from "../../../src/store/postgres/client";
import type { Queryable } from "../../../src/store/postgres/queryable";
import { resetForReplay } from "../../../src/store/postgres/replay";

const NOW = Date.parse("2026-12-01T12:00:00.000Z");
const iso = (ms: number) => new Date(ms).toISOString();
const db = <T>(fn: (q: Queryable) => Promise<T>) => withClient(env.HYPERDRIVE!, fn);

interface Seed {
  status?: "received" | "processing" | "done" | "failed";
  handled?: boolean | null;
  receivedAtMs?: number;
  body?: Uint8Array | null;
  headers?: unknown;
  attemptLog?: unknown;
  error?: string | null;
  attempts?: number;
}

/** Inserts one delivery as it would stand after processing moved it to `status`. */
async function seed(source: string, id: string, options: Seed = {}): Promise<void> {
  const at = iso(options.receivedAtMs ?? NOW);
  await db((q) =>
    q.query(
      `INSERT INTO deliveries (source, id, event_type, status, attempts, error, handled, body, received_at, updated_at, headers, attempt_log)
       VALUES ($1, $2, 'test.event', $3, $4, $5, $6, $7, $8, $8, $9::jsonb, $10::jsonb)`,
      [
        source,
        id,
        options.status ?? "received",
        options.attempts ?? 0,
        options.error ?? null,
        options.handled ?? null,
        options.body === undefined ? new TextEncoder().encode("{}") : options.body,
        at,
        options.headers === undefined ? null : JSON.stringify(options.headers),
        options.attemptLog === undefined ? null : JSON.stringify(options.attemptLog),
      ],
    ),
  );
}

describe("deliveryStats", () => {
  it("counts deliveries by status, in total and per source, and the unhandled ones, exactly", async () => {
    await seed("pg-stats-a", "1", { status: "done", handled: true });
    await seed("pg-stats-a", "2", { status: "done", handled: false });
    await seed("pg-stats-a", "3", { status: "done", handled: false });
    await seed("pg-stats-a", "4", { status: "failed" });
    await seed("pg-stats-b", "1", { status: "received" });
    await seed("pg-stats-b", "2", { status: "processing" });
    // With the exact count of unhandled ones, from the same snapshot: other files' tests write too.
    const [stats, unhandled] = await db(async (q) => {
      await q.query("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY");
      try {
        return [await deliveryStats(q, NOW), (await q.query<{ n: number }>("SELECT count(*)::int AS n FROM deliveries WHERE status = 'done' AND handled = false")).rows[0]!.n] as const;
      } finally {
        await q.query("COMMIT");
      }
    });
    expect(stats.bySource["pg-stats-a"]).toEqual({ received: 0, processing: 0, done: 3, failed: 1, filtered: 0 });
    expect(stats.bySource["pg-stats-b"]).toEqual({ received: 1, processing: 1, done: 0, failed: 0, filtered: 0 });
    // The totals are the sum of the sources, as numbers (pg gives COUNT(*) as a string).
    const sum = { received: 0, processing: 0, done: 0, failed: 0, filtered: 0 };
    for (const counts of Object.values(stats.bySource)) for (const status of Object.keys(sum) as (keyof typeof sum)[]) sum[status] += counts[status];
    expect(stats.counts).toEqual(sum);
    expect(stats.unhandled).toBe(unhandled);
    expect(stats.unhandled).toBeGreaterThanOrEqual(2);
  });

  it("reports the age of the oldest received or processing delivery in whole seconds, ignoring settled ones", async () => {
    // Older than anything any other test stores: the oldest waiting delivery of the whole table.
    const oldest = Date.parse("1971-01-01T00:00:00.000Z");
    await seed("pg-stats-age", "settled", { status: "done", handled: true, receivedAtMs: oldest - 5_000 });
    await seed("pg-stats-age", "failed", { status: "failed", receivedAtMs: oldest - 4_000 });
    await seed("pg-stats-age", "waiting", { status: "processing", receivedAtMs: oldest });
    await seed("pg-stats-age", "newer", { status: "received", receivedAtMs: oldest + 300_000 });
    expect((await db((q) => deliveryStats(q, oldest + 600_000))).oldestWaitingSeconds).toBe(600);
    expect((await db((q) => deliveryStats(q, oldest + 659_999))).oldestWaitingSeconds).toBe(659);
    // A clock behind the row's says 0, never a negative age.
    expect((await db((q) => deliveryStats(q, oldest - 1_000))).oldestWaitingSeconds).toBe(0);
  });
});

describe("getDelivery", () => {
  it("returns every summary field, the exact body bytes as a Uint8Array, the headers and the attempt history", async () => {
    const body = new Uint8Array([0xff, 0xfe, 0x00, 0x41]);
    const headers = [
      ["content-type", "application/json"],
      ["stripe-signature", "t=1,v1=ab"],
    ];
    const attemptLog = [
      { attempt: 1, at: "2026-12-01T12:00:01.000Z", ms: 12, outcome: "retry", error: "HTTP 503" },
      { attempt: 2, at: "2026-12-01T12:00:05.000Z", ms: 7, outcome: "done", error: null },
    ];
    await seed("pg-get", "whole", { status: "done", handled: true, attempts: 2, body, headers, attemptLog });
    const detail = await db((q) => getDelivery(q, { source: "pg-get", id: "whole" }));
    expect(detail).toEqual({
      source: "pg-get",
      id: "whole",
      eventType: "test.event",
      status: "done",
      attempts: 2,
      error: null,
      handled: true,
      receivedAt: "2026-12-01T12:00:00.000Z",
      updatedAt: "2026-12-01T12:00:00.000Z",
      duplicates: 0,
      lastDuplicateAt: null,
      subscriber: null,
      fanout: null,
      runs: [],
      body,
      headers,
      attemptLog,
    });
    expect(Object.getPrototypeOf(detail!.body)).toBe(Uint8Array.prototype);
  });

  it("says handled false for an unhandled delivery and null before a done mark, and keeps a deferral's count", async () => {
    const deferred = { attempt: null, at: null, ms: 3, outcome: "deferred", error: "busy (not counted)", count: 3 };
    await seed("pg-get", "unhandled", { status: "done", handled: false, attemptLog: [{ attempt: 1, at: null, ms: null, outcome: "unhandled", error: null }] });
    await seed("pg-get", "waiting", { status: "received", attemptLog: [deferred] });
    expect((await db((q) => getDelivery(q, { source: "pg-get", id: "unhandled" })))!.handled).toBe(false);
    const waiting = await db((q) => getDelivery(q, { source: "pg-get", id: "waiting" }));
    expect(waiting).toMatchObject({ handled: null, headers: null, attemptLog: [deferred] });
  });

  it("drops history entries it cannot read, as the D1 store does", async () => {
    await seed("pg-get", "odd-log", { attemptLog: [{ outcome: "exploded" }, "text", { outcome: "retry", attempt: "1", count: 1 }] });
    expect((await db((q) => getDelivery(q, { source: "pg-get", id: "odd-log" })))!.attemptLog).toEqual([{ attempt: null, at: null, ms: null, outcome: "retry", error: null }]);
  });

  it("returns an empty body as zero bytes, and body and headers null once retention cleared them", async () => {
    await seed("pg-get", "empty", { body: new Uint8Array(0) });
    expect((await db((q) => getDelivery(q, { source: "pg-get", id: "empty" })))!.body).toEqual(new Uint8Array(0));
    const old = Date.parse("1980-01-01T00:00:00.000Z");
    await seed("pg-get", "pruned", { status: "done", handled: true, receivedAtMs: old, headers: [["x-a", "b"]] });
    await db((q) => q.query("UPDATE deliveries SET body = NULL, headers = NULL WHERE source = 'pg-get' AND id = 'pruned'"));
    expect(await db((q) => getDelivery(q, { source: "pg-get", id: "pruned" }))).toMatchObject({ status: "done", body: null, headers: null });
  });

  it("finds an id with characters that need escaping, and null for an unknown delivery", async () => {
    await seed("pg-get", "a/b c?d'e");
    expect((await db((q) => getDelivery(q, { source: "pg-get", id: "a/b c?d'e" })))!.id).toBe("a/b c?d'e");
    expect(await db((q) => getDelivery(q, { source: "pg-get", id: "nope" }))).toBeNull();
  });

  it("shows a replay at the end of the history", async () => {
    await seed("pg-get", "replayed", { status: "failed", attempts: 1, error: "boom", attemptLog: [{ attempt: 1, at: null, ms: 5, outcome: "failed", error: "boom" }] });
    expect(await db((q) => resetForReplay(q, { source: "pg-get", id: "replayed" }, ["failed"], NOW))).not.toBeNull();
    const detail = await db((q) => getDelivery(q, { source: "pg-get", id: "replayed" }));
    expect(detail).toMatchObject({ status: "received", attempts: 0, error: null, handled: null });
    expect(detail!.attemptLog.map((entry) => [entry.attempt, entry.outcome, entry.at])).toEqual([
      [1, "failed", null],
      [null, "replayed", iso(NOW)],
    ]);
  });
});
