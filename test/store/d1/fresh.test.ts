/**
 * Untouched deliveries (store/d1/fresh.ts, migrations/0016): in no index but the age index, found by
 * the sweeper's walk from its mark. What the walk takes and when, where the mark goes (never past
 * the overview's count, never back), that the backlog's numbers still see every unfinished row,
 * and what the walk reads once the mark has moved. The sweeper's behaviour through the store, on
 * both stores: test/processing/sweeper.test.ts and test/store/retention.test.ts.
 */
import { env } from "cloudflare:workers";
import { beforeEach, describe, expect, it } from "vitest";
import { deliveryStats } from "../../../src/store/d1/admin";
import { FRESH_FROM, TAKE_UNTOUCHED_SQL, takeUntouched } from "../../../src/store/d1/fresh";
import { markTakeover, recordResult } from "../../../src/store/d1/lifecycle";
import { COUNTED_THROUGH, refreshOverview } from "../../../src/store/d1/overview";
import { insertDelivery } from "../../../src/store/d1/record";

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
    // Nothing untouched is left before the cutoff: the mark is the cutoff.
    expect(await mark(FRESH_FROM)).toBe(iso(T0 + 5 * MINUTE));
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
    expect(marks).toEqual([iso(T0 + 3_000), iso(T0 + 6_000), iso(T0 + 10 * MINUTE), iso(T0 + 10 * MINUTE)]);
  });

  it("never moves its mark past the overview's count, where a late insert is dated, nor back", async () => {
    await setMark(COUNTED_THROUGH, iso(T0 + 2 * MINUTE));
    await takeUntouched(env.DB, iso(T0 + 5 * MINUTE), iso(T0 + 10 * MINUTE), 500);
    expect(await mark(FRESH_FROM)).toBe(iso(T0 + 2 * MINUTE));
    // An insert held back by a browned-out database lands with its receiver's time, before the count: dated at the count (record.ts).
    await store("fresh-late", "late", T0 - 30 * MINUTE);
    const late = await env.DB.prepare("SELECT received_at, updated_at FROM deliveries WHERE id = 'late'").first();
    expect(late).toEqual({ received_at: iso(T0 + 2 * MINUTE), updated_at: iso(T0 - 30 * MINUTE) });
    expect(ids(await takeUntouched(env.DB, iso(T0 + 6 * MINUTE), iso(T0 + 11 * MINUTE), 500))).toEqual(["late"]);
    // The count going back (it never does) would not move the mark back.
    await setMark(COUNTED_THROUGH, iso(T0));
    await takeUntouched(env.DB, iso(T0 + 7 * MINUTE), iso(T0 + 12 * MINUTE), 500);
    expect(await mark(FRESH_FROM)).toBe(iso(T0 + 2 * MINUTE));
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
    const take = () => env.DB.batch([env.DB.prepare(TAKE_UNTOUCHED_SQL.take).bind(iso(T0 + 5 * MINUTE), iso(T0 + 6 * MINUTE), 500), env.DB.prepare(TAKE_UNTOUCHED_SQL.advance).bind(iso(T0 + 5 * MINUTE))]);
    const first = await take();
    expect(first[0]!.meta.rows_read).toBeGreaterThanOrEqual(5000);
    const second = await take();
    expect(second[0]!.results).toEqual([]);
    expect(second[0]!.meta.rows_read + second[1]!.meta.rows_read).toBeLessThan(20);
  });
});
