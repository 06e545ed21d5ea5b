/**
 * What one delivery's hot path writes to D1, in rows as D1 bills them (`meta.rows_written`: a row
 * for the table and one for each index entry a statement inserts; removing one is free). The
 * budget is migrations/0016's: 2 rows to store it (the table and the age index), none to claim it,
 * 1 to mark it done.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { claimedDelivery, markDone, markTakeover, readClaim, recordResult } from "../../../src/store/d1/lifecycle";
import { DUPLICATE_SQL } from "../../../src/store/d1/duplicates";
import { insertDelivery } from "../../../src/store/d1/record";
import { fanOut, markRunDone, requireRunDone, summarise } from "../../../src/store/d1/subscriber-runs";

const NOW = Date.parse("2026-12-02T00:00:00.000Z");
const body = new TextEncoder().encode('{"type":"payment.succeeded"}');

describe("rows written per delivery", () => {
  it("is 3 on the hot path: 2 to store it, 0 to claim it, 1 to mark it done", async () => {
    const ref = { source: "cost", id: "hot-path" };
    const insert = await insertDelivery(env.DB, { ...ref, eventType: "payment.succeeded", body, receivedAtMs: NOW }).run();
    const claim = await readClaim(env.DB, ref, NOW + 1).run();
    expect(claimedDelivery(claim)).toMatchObject({ kind: "run", attempt: 1 });
    const done = await markDone(env.DB, ref, NOW + 1, true, NOW).run();
    expect(done.meta.changes).toBe(1);
    expect([insert.meta.rows_written, claim.meta.rows_written, done.meta.rows_written]).toEqual([2, 0, 1]);
  });

  it("stores a filtered delivery in 3 rows: its entry in deliveries_filtered besides the table and the age index", async () => {
    const insert = await insertDelivery(env.DB, { source: "cost", id: "filtered", eventType: "customer.created", body, receivedAtMs: NOW, filtered: "filtered: type equals \"x\"; saw \"customer.created\"" }).run();
    expect(insert.meta.changes).toBe(1);
    expect(insert.meta.rows_written).toBe(3);
    const stored = await env.DB.prepare("SELECT status, handled, error FROM deliveries WHERE source = 'cost' AND id = 'filtered'").first();
    expect(stored).toEqual({ status: "done", handled: null, error: 'filtered: type equals "x"; saw "customer.created"' });
  });

  it("adds one row for a source that deduplicates on content (its digest's unique index)", async () => {
    const insert = await insertDelivery(env.DB, { source: "cost", id: "digest", eventType: null, body, receivedAtMs: NOW, contentDigest: new Uint8Array(32).fill(7) }).run();
    expect(insert.meta.rows_written).toBe(3);
  });

  it("pays on the rare paths only: a retry's result puts the row in deliveries_waiting, a takeover rewrites the row and its entry there", async () => {
    const ref = { source: "cost", id: "rare-paths" };
    await insertDelivery(env.DB, { ...ref, eventType: null, body, receivedAtMs: NOW }).run();
    const retry = await recordResult(env.DB, ref, NOW + 1, { kind: "retry", error: "boom" }, NOW);
    expect(retry).toBe(1);
    const waiting = await env.DB.prepare("SELECT id FROM deliveries INDEXED BY deliveries_waiting WHERE status IN ('received', 'processing') AND lease_token IS NOT NULL").all();
    expect(waiting.results).toEqual([{ id: "rare-paths" }]);
    const takeover = await markTakeover(env.DB, ref, NOW + 2, NOW + 1, 5, NOW).run();
    expect(claimedDelivery(takeover)).toMatchObject({ kind: "run" });
    expect(takeover.meta.rows_written).toBe(2);
  });
});

describe("rows written with the dashboard's columns (migrations/0008: headers, attempt history)", () => {
  it("stays 2 to store with headers, 0 to claim, 1 to mark done with the history; an unhandled done pays 1 more", async () => {
    const ref = { source: "dash-cost", id: "hot-path" };
    const insert = await insertDelivery(env.DB, { ...ref, eventType: "payment.succeeded", body, receivedAtMs: NOW, headers: '[["stripe-signature","t=1,v1=ab"]]' }).run();
    const claim = await readClaim(env.DB, ref, NOW + 1).run();
    const done = await markDone(env.DB, ref, NOW + 1, true, NOW + 20, { startedAtMs: NOW }).run();
    expect([insert.meta.rows_written, claim.meta.rows_written, done.meta.rows_written]).toEqual([2, 0, 1]);

    const other = { source: "dash-cost", id: "unhandled" };
    await insertDelivery(env.DB, { ...other, eventType: null, body, receivedAtMs: NOW }).run();
    expect((await markDone(env.DB, other, NOW + 1, false, NOW + 20, { startedAtMs: NOW }).run()).meta.rows_written).toBe(2);
  });
});

describe("rows written for duplicates (migrations/0009)", () => {
  it("adds nothing to a new delivery (2 rows); a duplicate's insert writes 0, its count 2: the original's row and its source's counter", async () => {
    const ref = { source: "dup-cost", id: "evt_1" };
    const delivery = { ...ref, eventType: null, body, receivedAtMs: NOW };
    const first = await insertDelivery(env.DB, delivery).run();
    const again = await insertDelivery(env.DB, delivery).run();
    expect([first.meta.rows_written, again.meta.changes, again.meta.rows_written]).toEqual([2, 0, 0]);
    const [bump, counter] = await env.DB.batch([
      env.DB.prepare(DUPLICATE_SQL.bump).bind(ref.source, ref.id, null, new Date(NOW + 1).toISOString()),
      env.DB.prepare(DUPLICATE_SQL.count).bind(ref.source),
    ]);
    expect([bump!.meta.changes, bump!.meta.rows_written, counter!.meta.rows_written]).toEqual([1, 1, 1]);
  });

  it("finds the original by its primary key or the content digest's index, never by a scan", async () => {
    const { results } = await env.DB.prepare(`EXPLAIN QUERY PLAN ${DUPLICATE_SQL.bump}`).bind("s", "i", new Uint8Array(32), "t").all<{ detail: string }>();
    const lines = results.map((row) => row.detail);
    expect(lines.filter((line) => /^SCAN /.test(line))).toEqual([]);
    expect(lines.join("\n")).toContain("deliveries_by_content_digest");
  });
});

describe("rows written for subscribers (migrations/0012)", () => {
  it("a delivery one subscriber takes writes no row more: its name goes with its done mark", async () => {
    const ref = { source: "cost-subs", id: "one" };
    await insertDelivery(env.DB, { ...ref, eventType: null, body, receivedAtMs: NOW }).run();
    const done = await markDone(env.DB, ref, NOW + 1, true, NOW, { startedAtMs: NOW, subscriber: "ledger" }).run();
    expect(done.meta.rows_written).toBe(1);
  });

  it("a fan-out to N writes the delivery's row and its waiting entry (2, as a takeover) and 2 per run; each run's done mark 1, its summary 2 (the row and its waiting entry)", async () => {
    const ref = { source: "cost-subs", id: "three" };
    await insertDelivery(env.DB, { ...ref, eventType: null, body, receivedAtMs: NOW }).run();
    const [marked, runs] = await env.DB.batch(fanOut(env.DB, ref, NOW + 1, ["a", "b", "c"], NOW));
    expect([marked!.meta.rows_written, runs!.meta.rows_written]).toEqual([2, 6]);
    const run = { ...ref, subscriber: "a" };
    const [done, guard, summary] = await env.DB.batch([markRunDone(env.DB, run, NOW + 2, true, NOW), requireRunDone(env.DB, run, NOW + 2), summarise(env.DB, ref, NOW)]);
    expect([done!.meta.rows_written, guard!.meta.rows_written, summary!.meta.rows_written]).toEqual([1, 0, 2]);
  });
});
