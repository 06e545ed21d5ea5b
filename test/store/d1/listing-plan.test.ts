/**
 * The D1 listing's query plans and read costs (store/d1/listing.ts): which index each filter walks
 * (EXPLAIN QUERY PLAN), and the bounded window of the age index for what no index serves, measured
 * in D1's rows read. D1's own workings: Postgres's plans and window are test/store/postgres/listing*.test.ts;
 * the listing's behaviour on both stores is test/http/admin/deliveries.test.ts.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { listDeliveries, listingStatement } from "../../../src/store/d1/listing";
import { LISTING_WINDOW } from "../../../src/store/listing-query";

describe("the listing's query plan", () => {
  const after = { receivedAt: "2026-12-01T00:00:00.000Z", source: "stripe", id: "evt_1" };

  async function planOf(query: Parameters<typeof listingStatement>[0], part: "rows" | "window" = "rows"): Promise<string[]> {
    const { sql, params } = listingStatement(query)[part]!;
    const { results } = await env.DB.prepare(`EXPLAIN QUERY PLAN ${sql}`).bind(...params).all<{ detail: string }>();
    return results.map((row) => row.detail);
  }

  it("walks the age index newest first without a status, on the first page and after a cursor, sorting nothing", async () => {
    expect(await planOf({ limit: 50 })).toEqual(["SCAN deliveries USING INDEX deliveries_by_age"]);
    expect(await planOf({ limit: 50, after })).toEqual(["SEARCH deliveries USING INDEX deliveries_by_age ((received_at,source,id)<(?,?,?))"]);
  });

  it("walks the partial index of its status for failed and processing, the age index for done, and both for received", async () => {
    // migrations/0006: a partial index only pays for the rows in it; done rows are nearly all rows.
    expect(await planOf({ status: "failed", limit: 50, after })).toEqual(["SEARCH deliveries USING INDEX deliveries_failed ((received_at,source,id)<(?,?,?))"]);
    // migrations/0016: a processing row was written by its takeover, which put it in the waiting index.
    expect(await planOf({ status: "processing", limit: 50, after })).toEqual(["SEARCH deliveries USING INDEX deliveries_waiting ((received_at,source,id)<(?,?,?))"]);
    // A received row is in the waiting index once touched, else untouched on the age index past the walk's mark (store/d1/fresh.ts): both walked, never the table.
    for (const query of [{ status: "received" as const, limit: 50 }, { status: "received" as const, limit: 50, after }, { status: "received" as const, source: "stripe", limit: 50 }]) {
      const plan = (await planOf(query)).join("\n");
      expect(plan).toMatch(/INDEX deliveries_waiting[\s\S]*SEARCH deliveries USING INDEX deliveries_by_age \(received_at>\?/);
      // Never the table, nor the whole age index.
      expect(plan).not.toMatch(/^SCAN deliveries( USING (COVERING )?INDEX deliveries_by_age)?$/m);
      // Every row found is one asked for: no window of examined entries, unless a source is checked on them.
      expect(listingStatement(query).window === null).toBe(!("source" in query));
    }
    // Filtered: done rows without `handled` (store/filtered.ts), in their own partial index (migrations/0013).
    expect((await planOf({ status: "filtered", limit: 50, after })).join("\n")).toMatch(/USING (COVERING )?INDEX deliveries_filtered/);
    expect((await planOf({ status: "filtered", source: "stripe", limit: 50 })).join("\n")).toMatch(/USING (COVERING )?INDEX deliveries_filtered/);
  });

  it("keeps to the status's partial index with a source too, and to a bounded window of the age index for what no index serves", async () => {
    // Not the primary key for the source (all its rows, then sorted), as `source = ?` would have it.
    for (const status of ["failed", "processing"] as const) {
      const plan = (await planOf({ status, source: "stripe", limit: 50, after })).join("\n");
      expect(plan).toMatch(/USING (COVERING )?INDEX deliveries_(failed|waiting)/);
      expect(plan).not.toMatch(/PRIMARY KEY \(source=\?\)/);
    }
    for (const query of [{ status: "done" as const }, { eventType: "invoice.paid" }, { source: "stripe" }]) {
      const statements = listingStatement({ ...query, limit: 50 });
      expect(statements.rows.sql).toContain(`LIMIT ${LISTING_WINDOW})`);
      expect(statements.window!.sql).toContain(`OFFSET ${LISTING_WINDOW - 1}`);
      const plan = (await planOf({ ...query, limit: 50, after })).join("\n");
      expect(plan).toMatch(/deliveries_by_age/);
      expect(plan).not.toMatch(/PRIMARY KEY \(source=\?\)|^SCAN deliveries$/m);
    }
  });

  it("reads the same for a filter that matches nothing however many rows lie beyond its window, and goes on from there page by page", async () => {
    const insert = (from: number, to: number) =>
      env.DB.prepare(
        `WITH RECURSIVE n(i) AS (SELECT ${from} UNION ALL SELECT i + 1 FROM n WHERE i < ${to})
         INSERT INTO deliveries (source, id, event_type, status, attempts, body, received_at, updated_at)
         SELECT 'window', 'w-' || i, CASE WHEN i = 1 THEN 'rare.event' ELSE 'common.event' END, 'done', 1, x'7b7d',
                strftime('%Y-%m-%dT%H:%M:%fZ', 1700000000 + i, 'unixepoch'), '2026-01-01T00:00:00.000Z' FROM n`,
      ).run();
    const until = "2023-11-16T00:00:00.000Z"; // after every row of this test, before every other one
    const rowsRead = async () => {
      const read = listingStatement({ eventType: "rare.event", until, limit: 20 });
      const results = await env.DB.batch([env.DB.prepare(read.rows.sql).bind(...read.rows.params), env.DB.prepare(read.window!.sql).bind(...read.window!.params)]);
      return results.reduce((sum, result) => sum + result.meta.rows_read, 0);
    };
    // The newest LISTING_WINDOW + 100 rows, then 20,000 older ones beyond the first page's window.
    await insert(20_001, 20_000 + LISTING_WINDOW + 100);
    const before = await rowsRead();
    await insert(1, 20_000);
    expect(await rowsRead()).toBe(before);

    const first = await listDeliveries(env.DB, { eventType: "rare.event", until, limit: 20 });
    expect(first.deliveries).toEqual([]);
    expect(first.nextKey).not.toBeNull();
    expect(first.searchedThrough).toBe(first.nextKey!.receivedAt);
    let page = first;
    const found: string[] = [];
    let pages = 1;
    while (page.nextKey && pages < 10) {
      page = await listDeliveries(env.DB, { eventType: "rare.event", until, limit: 20, after: page.nextKey });
      found.push(...page.deliveries.map((delivery) => delivery.id));
      pages++;
    }
    expect(found).toEqual(["w-1"]);
    expect(pages).toBe(4); // 30,100 rows: windows of 10,000
    expect(page.nextKey).toBeNull();
  });
});
