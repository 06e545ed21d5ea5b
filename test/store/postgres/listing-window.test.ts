/**
 * The listing's window in the Postgres store (store/listing-query.ts LISTING_WINDOW): a filter no index
 * serves looks at most that many deliveries per page, and the page says how far back it searched;
 * what test/http/admin/deliveries.test.ts checks of the D1 store. In a file and a schema of its own: its
 * 30,100 rows would fill the window of every other listing test (the database is shared with the
 * other files, which run at the same time).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LISTING_WINDOW, type ListingQuery } from "../../../src/store/listing-query";
import { listDeliveries, listingStatement } from "../../../src/store/postgres/listing";
import type { Queryable } from "../../../src/store/postgres/queryable";
import { privateSchema } from "../../helpers/postgres-schema";

/** A schema of this file's own (test/helpers/postgres-schema.ts): its tests move the inbox's global state. */
const db = privateSchema("listing_window");

/** After every row of this file: a listing until then starts at the newest of them. */
const UNTIL = "2001-01-01T00:00:00.000Z";
const ROWS = 20_000 + LISTING_WINDOW + 100;

interface PlanNode {
  "Node Type": string;
  "Relation Name"?: string;
  "Actual Rows": number;
  "Actual Loops": number;
  Plans?: PlanNode[];
}

/** Every node of an EXPLAIN (ANALYZE, FORMAT JSON) plan. */
function nodesOf(node: PlanNode): PlanNode[] {
  return [node, ...(node.Plans ?? []).flatMap(nodesOf)];
}

beforeAll(async () => {
  // 'w-1' is the oldest and the only rare one; one second apart from 2000-01-01 on, all done.
  await db(async (q) => {
    await q.query(
      `INSERT INTO deliveries (source, id, event_type, status, attempts, handled, body, received_at, updated_at)
       SELECT 'pg-window', 'w-' || i, CASE WHEN i = 1 THEN 'rare.event' ELSE 'common.event' END, 'done', 1, true, '\\x7b7d',
              to_char(timestamp '2000-01-01' + i * interval '1 second', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'), '2026-01-01T00:00:00.000Z'
         FROM generate_series(1, $1::int) AS i`,
      [ROWS],
    );
    await q.query("ANALYZE deliveries");
  });
});

describe("a filter no index serves", () => {
  it("examines at most LISTING_WINDOW entries a page, says how far back it searched, and goes on from there page by page", async () => {
    const query: ListingQuery = { eventType: "rare.event", until: UNTIL, limit: 20 };
    const first = await db((q) => listDeliveries(q, query));
    expect(first.deliveries).toEqual([]);
    expect(first.nextKey).not.toBeNull();
    expect(first.searchedThrough).toBe(first.nextKey!.receivedAt);
    // The window's last entry: the LISTING_WINDOW-th newest row.
    expect(first.nextKey).toEqual({ receivedAt: expect.any(String), source: "pg-window", id: `w-${ROWS - LISTING_WINDOW + 1}` });
    let page = first;
    const found: string[] = [];
    let pages = 1;
    while (page.nextKey && pages < 10) {
      page = await db((q) => listDeliveries(q, { ...query, after: page.nextKey! }));
      found.push(...page.deliveries.map((delivery) => delivery.id));
      pages++;
    }
    expect(found).toEqual(["w-1"]);
    expect(pages).toBe(4); // 30,100 rows: windows of 10,000
    expect(page.nextKey).toBeNull();
    expect(page.searchedThrough).toBeNull();
  });

  it("ends a page that filled before its window ran out at its last row, with no searchedThrough", async () => {
    const page = await db((q) => listDeliveries(q, { source: "pg-window", until: UNTIL, limit: 3 }));
    expect(page.deliveries.map((delivery) => delivery.id)).toEqual([`w-${ROWS}`, `w-${ROWS - 1}`, `w-${ROWS - 2}`]);
    expect(page).toMatchObject({ nextKey: { id: `w-${ROWS - 2}` }, searchedThrough: null });
  });

  it("reads no more rows of the table than the window, however many lie beyond it", async () => {
    const { sql, params } = listingStatement({ eventType: "rare.event", until: UNTIL, limit: 20 });
    const [plan] = await db(async (q) => (await q.query<{ "QUERY PLAN": { Plan: PlanNode }[] }>(`EXPLAIN (ANALYZE, FORMAT JSON) ${sql}`, params)).rows[0]!["QUERY PLAN"]);
    const scans = nodesOf(plan!.Plan).filter((node) => node["Relation Name"] === "deliveries");
    expect(scans.length).toBeGreaterThan(0);
    for (const scan of scans) {
      expect(scan["Node Type"]).not.toBe("Seq Scan");
      expect(scan["Actual Rows"] * scan["Actual Loops"]).toBeLessThanOrEqual(LISTING_WINDOW);
    }
  });
});
