/**
 * Untouched deliveries (store/d1/fresh.ts, migrations/0016): in no index but the age index, found by
 * the sweeper's walk from its mark. What the walk takes and when, where the mark goes (to the first
 * untouched row left, never back), that an insert is never dated behind it, that the backlog's
 * numbers still see every unfinished row, and what the walk and the reads on a request's path read. The sweeper's behaviour through the store, on
 * both stores: test/processing/sweeper.test.ts and test/store/retention.test.ts.
 */
import { env } from "cloudflare:workers";
import { beforeEach, describe, expect, it } from "vitest";
import { deliveryStats } from "../../../src/store/d1/admin";
import { FRESH_FROM, OLDEST_UNFINISHED_SQL, TAKE_UNTOUCHED_SQL, takeUntouched, UNTOUCHED_SCAN_LIMIT } from "../../../src/store/d1/fresh";
import { markTakeover, recordResult } from "../../../src/store/d1/lifecycle";
import { COUNT_WALK_LIMIT, COUNTED_THROUGH, refreshOverview } from "../../../src/store/d1/overview";
import { listDeliveries } from "../../../src/store/d1/listing";
import { insertDelivery } from "../../../src/store/d1/record";
import { takeStranded } from "../../../src/store/d1/sweep";

const T0 = Date.parse("2035-03-01T00:00:00.000Z");
const MINUTE = 60_000;
const iso = (ms: number) => new Date(ms).toISOString();
const body = new Uint8Array([123, 125]);

async function store(source: string, id: string, receivedAtMs: number): Promise<void> {
  expect((await insertDelivery(env.DB, { source, id, eventType: null, body, receivedAtMs }).run()).meta.changes).toBe(1);
}
async function setMark(name: string, value: string): Promise<void> {
  await env.DB.prepare("INSERT INTO inbox_marks (name, value) VALUES (?1, ?2) ON CONFLICT (name) DO UPDATE SET value = excluded.value").bind(name, value).run();
}
async function mark(name: string): Promise<string | null> {
  return (await env.DB.prepare("SELECT value FROM inbox_marks WHERE name = ?1").bind(name).first<{ value: string }>())?.value ?? null;
}
const ids = (refs: readonly { id: string }[]) => refs.map((ref) => ref.id).sort();

/** The overview's count moved on past what the test stored (the walk's mark never passes it). */
const countedFarAhead = () => setMark(COUNTED_THROUGH, iso(T0 + 24 * 60 * MINUTE));

beforeEach(async () => {
  // Every test starts from an empty table, the walk and the count at the start of time (an insert
  // is dated no earlier than the count: record.ts).
  await env.DB.prepare("DELETE FROM deliveries").run();
  await setMark(FRESH_FROM, "");
  await setMark(COUNTED_THROUGH, "");
});

describe("the walk of untouched deliveries", () => {
  it("takes an untouched delivery older than the cutoff once, into the waiting index, and moves its mark past it", async () => {
    await store("fresh", "lost", T0);
    await store("fresh", "young", T0 + 9 * MINUTE);
    await store("fresh", "done", T0 + MINUTE);
    await env.DB.prepare("UPDATE deliveries SET status = 'done', lease_token = 5 WHERE id = 'done'").run();
    await countedFarAhead();

    const taken = await takeUntouched(env.DB, iso(T0 + 5 * MINUTE), iso(T0 + 10 * MINUTE), 500);
    expect(ids(taken)).toEqual(["lost"]);
    const row = await env.DB.prepare("SELECT lease_token, updated_at FROM deliveries WHERE id = 'lost'").first();
    expect(row).toEqual({ lease_token: 0, updated_at: iso(T0 + 10 * MINUTE) });
    // The mark moves up to the first untouched row left, of any age: the young one.
    expect(await mark(FRESH_FROM)).toBe(iso(T0 + 9 * MINUTE));
    // A sweep later: the one taken is no longer untouched, the young one not yet old enough.
    expect(await takeUntouched(env.DB, iso(T0 + 6 * MINUTE), iso(T0 + 11 * MINUTE), 500)).toEqual([]);
    expect(ids(await takeUntouched(env.DB, iso(T0 + 10 * MINUTE), iso(T0 + 15 * MINUTE), 500))).toEqual(["young"]);
  });

  it("takes at most its limit per sweep, the oldest first, and keeps its mark at the first one it left", async () => {
    for (let index = 0; index < 7; index++) await store("fresh-limit", `d-${index}`, T0 + index * 1_000);
    await countedFarAhead();
    const rounds: string[][] = [];
    const marks: (string | null)[] = [];
    for (let sweep = 0; sweep < 4; sweep++) {
      rounds.push(ids(await takeUntouched(env.DB, iso(T0 + 10 * MINUTE), iso(T0 + 10 * MINUTE + sweep), 3)));
      marks.push(await mark(FRESH_FROM));
    }
    expect(rounds).toEqual([["d-0", "d-1", "d-2"], ["d-3", "d-4", "d-5"], ["d-6"], []]);
    // None left: the mark is the sweep's time.
    expect(marks).toEqual([iso(T0 + 3_000), iso(T0 + 6_000), iso(T0 + 10 * MINUTE + 2), iso(T0 + 10 * MINUTE + 3)]);
  });

  it("dates a late insert at its mark, after a recount too, and never moves the mark back", async () => {
    await countedFarAhead();
    await takeUntouched(env.DB, iso(T0 + 5 * MINUTE), iso(T0 + 10 * MINUTE), 500);
    expect(await mark(FRESH_FROM)).toBe(iso(T0 + 10 * MINUTE));
    // The documented recount (docs/operations.md) deletes the overview's count: its mark no longer
    // dates anything forward. An insert held back by a browned-out database lands with its
    // receiver's time, behind the walk's mark: dated at the mark, so the walk still finds it.
    await env.DB.prepare("DELETE FROM inbox_marks WHERE name = ?1").bind(COUNTED_THROUGH).run();
    await store("fresh-late", "late", T0 - 30 * MINUTE);
    const late = await env.DB.prepare("SELECT received_at, updated_at FROM deliveries WHERE id = 'late'").first();
    expect(late).toEqual({ received_at: iso(T0 + 10 * MINUTE), updated_at: iso(T0 - 30 * MINUTE) });
    expect((await deliveryStats(env.DB, T0 + 11 * MINUTE)).oldestWaitingSeconds).toBe(60);
    expect(ids(await takeUntouched(env.DB, iso(T0 + 11 * MINUTE), iso(T0 + 12 * MINUTE), 500))).toEqual(["late"]);
    // A sweep with an earlier clock (another isolate's) does not move the mark back.
    await takeUntouched(env.DB, iso(T0), iso(T0 + MINUTE), 500);
    expect(await mark(FRESH_FROM)).toBe(iso(T0 + 12 * MINUTE));
  });

  it("leaves the backlog's numbers whole: untouched and waiting rows are counted, the oldest of either is the oldest waiting", async () => {
    await store("fresh-count", "untouched", T0);
    await store("fresh-count", "retrying", T0 - 5 * MINUTE);
    await store("fresh-count", "taken-over", T0 - 3 * MINUTE);
    expect(await recordResult(env.DB, { source: "fresh-count", id: "retrying" }, T0 + 1, { kind: "retry", error: "boom" }, T0)).toBe(1);
    expect((await markTakeover(env.DB, { source: "fresh-count", id: "taken-over" }, T0 + 2, 0, 5, T0).run()).results).toHaveLength(1);
    const now = T0 + MINUTE;
    const overview = await refreshOverview(env.DB, now);
    expect(overview.bySource["fresh-count"]).toMatchObject({ received: 2, processing: 1 });
    expect((await deliveryStats(env.DB, now)).oldestWaitingSeconds).toBe(360);
    // Once the oldest waiting is done, the oldest is the untouched one.
    await env.DB.prepare("UPDATE deliveries SET status = 'done' WHERE id IN ('retrying', 'taken-over')").run();
    expect((await deliveryStats(env.DB, now)).oldestWaitingSeconds).toBe(60);
  });

  it("reads only the rows stored since its mark: 5,000 done deliveries behind it cost nothing", async () => {
    await env.DB.prepare(
      `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 5000)
       INSERT INTO deliveries (source, id, status, attempts, handled, body, received_at, updated_at, lease_token)
       SELECT 'fresh-bulk', 'd-' || i, 'done', 1, 1, x'7b7d', '2035-03-01T00:00:00.000Z', '2035-03-01T00:00:00.000Z', 1 FROM n`,
    ).run();
    await countedFarAhead();
    const take = () => env.DB.batch([env.DB.prepare(TAKE_UNTOUCHED_SQL.take).bind(iso(T0 + 5 * MINUTE), iso(T0 + 6 * MINUTE), 500), env.DB.prepare(TAKE_UNTOUCHED_SQL.advance).bind(iso(T0 + 6 * MINUTE))]);
    const first = await take();
    expect(first[0]!.meta.rows_read).toBeGreaterThanOrEqual(5000);
    const second = await take();
    expect(second[0]!.results).toEqual([]);
    expect(second[0]!.meta.rows_read + second[1]!.meta.rows_read).toBeLessThan(20);
  });

  it("reads at most UNTOUCHED_SCAN_LIMIT entries past the mark for the oldest waiting, however long the stretch", async () => {
    const bulk = (from: number, to: number, status: string) =>
      env.DB.prepare(
        `WITH RECURSIVE n(i) AS (SELECT ${from} UNION ALL SELECT i + 1 FROM n WHERE i < ${to})
         INSERT INTO deliveries (source, id, status, attempts, handled, body, received_at, updated_at)
         SELECT 'fresh-scan', 'd-' || i, '${status}', 0, 1, x'7b7d', strftime('%Y-%m-%dT%H:%M:%fZ', ${T0 / 1000} + i / 1000.0, 'unixepoch'), '2035-03-01T00:00:00.000Z' FROM n`,
      ).run();
    // No sweep yet: the mark is at the start, and every row is past it, all done.
    await bulk(1, 2 * UNTOUCHED_SCAN_LIMIT, "done");
    const first = await env.DB.prepare(OLDEST_UNFINISHED_SQL).run();
    expect(first.results).toEqual([{ oldest: null }]);
    // The same read with the stretch twice as long reads no more (an entry and its row each, at most).
    await bulk(2 * UNTOUCHED_SCAN_LIMIT + 1, 4 * UNTOUCHED_SCAN_LIMIT, "done");
    const second = await env.DB.prepare(OLDEST_UNFINISHED_SQL).run();
    expect(second.results).toEqual([{ oldest: null }]);
    expect(second.meta.rows_read).toBeLessThanOrEqual(2 * UNTOUCHED_SCAN_LIMIT + 10);
    expect(second.meta.rows_read).toBe(first.meta.rows_read);
    // An untouched row within the bound is the oldest waiting, the older of two.
    await env.DB.prepare("UPDATE deliveries SET status = 'received' WHERE id IN ('d-7', 'd-9')").run();
    expect(await env.DB.prepare(OLDEST_UNFINISHED_SQL).first()).toEqual({ oldest: iso(T0 + 7) });
    // The walk stops at the first untouched entry: with one in its first run at the front, a few rows read.
    await env.DB.prepare("UPDATE deliveries SET status = 'received' WHERE id = 'd-1'").run();
    const front = await env.DB.prepare(OLDEST_UNFINISHED_SQL).run();
    expect(front.results).toEqual([{ oldest: iso(T0 + 1) }]);
    expect(front.meta.rows_read).toBeLessThan(10);
  });

  it("counts every untouched row of a long stretch, a backlog or a stopped sweeper's, each as it is", async () => {
    const backlog = COUNT_WALK_LIMIT + 2_000;
    await env.DB.prepare(
      `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ${backlog})
       INSERT INTO deliveries (source, id, status, attempts, body, received_at, updated_at)
       SELECT 'fresh-backlog', 'b-' || i, 'received', 0, x'7b7d', strftime('%Y-%m-%dT%H:%M:%fZ', ${T0 / 1000} + i / 1000.0, 'unixepoch'), '2035-03-01T00:00:00.000Z' FROM n`,
    ).run();
    // Two of them done, within the bound; the overview's totals count every row past its own mark.
    await env.DB.prepare("UPDATE deliveries SET status = 'done', handled = 1, lease_token = 1 WHERE id IN ('b-1', 'b-2')").run();
    const overview = await refreshOverview(env.DB, T0 + 10 * MINUTE);
    expect(overview.bySource["fresh-backlog"]).toMatchObject({ received: backlog - 2, done: 2 });
    // A sweeper that stopped: the stretch grows with done rows, past the 5,000 a request's read looks at too.
    await env.DB.prepare("UPDATE deliveries SET status = 'done', handled = 1, lease_token = 1 WHERE CAST(substr(id, 3) AS INTEGER) % 4 != 0").run();
    await env.DB.prepare("UPDATE deliveries SET status = 'failed', lease_token = 1 WHERE id IN ('b-40000', 'b-51000')").run();
    const later = await refreshOverview(env.DB, T0 + 11 * MINUTE);
    expect(later.bySource["fresh-backlog"]).toMatchObject({ received: backlog / 4 - 2, failed: 2, done: backlog - backlog / 4 });
  });

  it("lists received deliveries from both walks, touched and untouched, newest first, each page once", async () => {
    await store("fresh-list", "retrying", T0);
    await store("fresh-list", "taken-over", T0 + 1_000);
    await store("fresh-list", "done", T0 + 2_000);
    await store("fresh-list", "untouched-old", T0 + 3_000);
    await store("fresh-list", "untouched-new", T0 + 4_000);
    expect(await recordResult(env.DB, { source: "fresh-list", id: "retrying" }, T0 + 10, { kind: "retry", error: "boom" }, T0)).toBe(1);
    expect((await markTakeover(env.DB, { source: "fresh-list", id: "taken-over" }, T0 + 11, 0, 5, T0).run()).results).toHaveLength(1);
    await env.DB.prepare("UPDATE deliveries SET status = 'done' WHERE id = 'done'").run();
    // A sweep moved the mark up to the first untouched row: the retrying one is behind it, in the waiting index.
    await takeUntouched(env.DB, iso(T0 - MINUTE), iso(T0 + 5_000), 500);
    expect(await mark(FRESH_FROM)).toBe(iso(T0 + 3_000));

    const all = await listDeliveries(env.DB, { status: "received", limit: 10 });
    expect(all.deliveries.map((d) => d.id)).toEqual(["untouched-new", "untouched-old", "retrying"]);
    const seen: string[] = [];
    let after: typeof all.nextKey | undefined;
    do {
      const page = await listDeliveries(env.DB, { status: "received", limit: 1, ...(after ? { after } : {}) });
      seen.push(...page.deliveries.map((d) => d.id));
      after = page.nextKey;
    } while (after);
    expect(seen).toEqual(["untouched-new", "untouched-old", "retrying"]);
    expect((await listDeliveries(env.DB, { status: "processing", limit: 10 })).deliveries.map((d) => d.id)).toEqual(["taken-over"]);
  });

  it("shares a sweep's limit: a backlog of untouched rows does not hold back a run that vanished mid-work", async () => {
    await env.DB.prepare(
      `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 30)
       INSERT INTO deliveries (source, id, status, attempts, body, received_at, updated_at)
       SELECT 'fresh-share', 'u-' || i, 'received', 0, x'7b7d', strftime('%Y-%m-%dT%H:%M:%fZ', ${T0 / 1000} + i, 'unixepoch'), '2035-03-01T00:00:00.000Z' FROM n`,
    ).run();
    await store("fresh-share", "vanished", T0 - MINUTE);
    expect((await markTakeover(env.DB, { source: "fresh-share", id: "vanished" }, T0, 0, 5, T0 - MINUTE).run()).results).toHaveLength(1);
    const cutoffs = { neverAttemptedBeforeMs: T0 + 10 * MINUTE, retryWaitingBeforeMs: T0 + 10 * MINUTE, processingBeforeMs: T0 + 10 * MINUTE };
    const first = await takeStranded(env.DB, cutoffs, T0 + 10 * MINUTE, 10);
    expect(first).toHaveLength(10);
    expect(first.map((ref) => ref.id)).toContain("vanished");
    // With nothing waiting, the untouched take the whole limit.
    expect(await takeStranded(env.DB, cutoffs, T0 + 10 * MINUTE, 10)).toHaveLength(10);
    expect(await takeStranded(env.DB, cutoffs, T0 + 10 * MINUTE, 20)).toHaveLength(11);
  });
});
