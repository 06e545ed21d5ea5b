/**
 * The listing of the Postgres store (src/store/postgres/listing.ts) on a real Postgres: keyset pages
 * newest first, the filters, the lookup of one id across sources, and which index each page walks;
 * what test/http/admin/deliveries.test.ts and test/store/dashboard-data.test.ts check of the D1 store.
 * The window (LISTING_WINDOW) has a file of its own: its rows would fill every other test's window.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { ListingQuery } from "../../../src/store/listing-query";
import { withClient } from "../../../src/store/postgres/client";
import { findDeliveryById, listDeliveries, listingStatement } from "../../../src/store/postgres/listing";
import type { Queryable } from "../../../src/store/postgres/queryable";

const T0 = Date.parse("2026-12-01T00:00:00.000Z");
const iso = (ms: number) => new Date(ms).toISOString();
const db = <T>(fn: (q: Queryable) => Promise<T>) => withClient(env.HYPERDRIVE!, fn);

/** Stores a delivery of `source` received at T0 + `offsetMs`, in `status`. */
async function seed(source: string, id: string, offsetMs: number, options: { status?: string; eventType?: string; handled?: boolean | null; error?: string } = {}) {
  await db((q) =>
    q.query(
      `INSERT INTO deliveries (source, id, event_type, status, attempts, error, handled, body, received_at, updated_at)
       VALUES ($1, $2, $3, $4, 0, $5, $6, '\\x7b7d', $7, $7)`,
      [source, id, options.eventType ?? "test.event", options.status ?? "received", options.error ?? null, options.handled ?? null, iso(T0 + offsetMs)],
    ),
  );
}

async function ids(query: ListingQuery): Promise<string[]> {
  return (await db((q) => listDeliveries(q, query))).deliveries.map((delivery) => delivery.id);
}

/** Every page of a listing, following nextKey. */
async function allPages(query: ListingQuery): Promise<{ pages: number; ids: string[] }> {
  const found: string[] = [];
  let after: ListingQuery["after"];
  let pages = 0;
  do {
    const page = await db((q) => listDeliveries(q, { ...query, after }));
    pages++;
    found.push(...page.deliveries.map((delivery) => delivery.id));
    after = page.nextKey ?? undefined;
  } while (after && pages < 100);
  return { pages, ids: found };
}

describe("listDeliveries", () => {
  it("lists a delivery with every summary field, handled as a boolean", async () => {
    await seed("pg-list-fields", "one", 0, { status: "failed", error: "PermanentError: no amount" });
    await seed("pg-list-fields", "two", 1, { status: "done", handled: false });
    const page = await db((q) => listDeliveries(q, { source: "pg-list-fields", limit: 10 }));
    expect(page).toEqual({
      deliveries: [
        { source: "pg-list-fields", id: "two", eventType: "test.event", status: "done", attempts: 0, error: null, handled: false, receivedAt: "2026-12-01T00:00:00.001Z", updatedAt: "2026-12-01T00:00:00.001Z", duplicates: 0, lastDuplicateAt: null, subscriber: null, fanout: null },
        { source: "pg-list-fields", id: "one", eventType: "test.event", status: "failed", attempts: 0, error: "PermanentError: no amount", handled: null, receivedAt: "2026-12-01T00:00:00.000Z", updatedAt: "2026-12-01T00:00:00.000Z", duplicates: 0, lastDuplicateAt: null, subscriber: null, fanout: null },
      ],
      nextKey: null,
      searchedThrough: null,
    });
  });

  it("lists newest first and filters by status and source", async () => {
    await seed("pg-list-filter", "a", 1_000, { status: "failed" });
    await seed("pg-list-filter", "b", 2_000);
    await seed("pg-list-filter", "c", 3_000, { status: "failed" });
    await seed("pg-list-filter-other", "d", 4_000, { status: "failed" });
    expect(await ids({ status: "failed", source: "pg-list-filter", limit: 10 })).toEqual(["c", "a"]);
    expect(await ids({ source: "pg-list-filter", limit: 10 })).toEqual(["c", "b", "a"]);
    expect(await ids({ status: "received", source: "pg-list-filter", limit: 10 })).toEqual(["b"]);
  });

  it("pages through every delivery once, with ties on received_at broken by source and id", async () => {
    // 25 deliveries sharing 5 timestamps: the cursor must carry more than the time.
    for (let index = 0; index < 25; index++) await seed("pg-list-pages", `p${String(index).padStart(2, "0")}`, Math.floor(index / 5) * 1_000);
    const { pages, ids: found } = await allPages({ source: "pg-list-pages", limit: 4 });
    expect(pages).toBe(7);
    expect(found).toHaveLength(25);
    expect(new Set(found).size).toBe(25);
    // Without a filter no index serves, the same: one walk of the age index from the cursor.
    const unfiltered = await allPages({ since: iso(T0), until: iso(T0 + 4_001), limit: 4 });
    expect(unfiltered.ids.filter((id) => id.startsWith("p"))).toEqual(found);
  });

  it("orders ids byte by byte, as D1 does (COLLATE \"C\")", async () => {
    for (const id of ["b", "B", "a", "_", "é"]) await seed("pg-list-bytes", id, 50_000);
    expect(await ids({ source: "pg-list-bytes", limit: 10 })).toEqual(["é", "b", "a", "_", "B"]);
  });

  it("keeps pages stable while new deliveries arrive between them", async () => {
    for (let index = 0; index < 6; index++) await seed("pg-list-stable", `s${index}`, index * 1_000);
    const first = await db((q) => listDeliveries(q, { source: "pg-list-stable", limit: 3 }));
    expect(first.deliveries.map((delivery) => delivery.id)).toEqual(["s5", "s4", "s3"]);
    await seed("pg-list-stable", "newest", 60_000);
    const second = await db((q) => listDeliveries(q, { source: "pg-list-stable", limit: 3, after: first.nextKey! }));
    expect(second.deliveries.map((delivery) => delivery.id)).toEqual(["s2", "s1", "s0"]);
    expect(second.nextKey).toBeNull();
  });

  it("filters by event type, a received time range (since inclusive, until exclusive) and unhandled", async () => {
    const source = "pg-list-types";
    const at = (minutes: number) => minutes * 60_000;
    await seed(source, "a", at(0), { eventType: "invoice.paid", status: "done", handled: true });
    await seed(source, "b", at(10), { eventType: "invoice.paid", status: "done", handled: false });
    await seed(source, "c", at(20), { eventType: "charge.failed", status: "done", handled: false });
    await seed(source, "d", at(30), { eventType: "invoice.paid" });
    expect(await ids({ source, eventType: "invoice.paid", limit: 10 })).toEqual(["d", "b", "a"]);
    expect(await ids({ source, since: iso(T0 + at(10)), until: iso(T0 + at(30)), limit: 10 })).toEqual(["c", "b"]);
    expect(await ids({ source, eventType: "invoice.paid", since: iso(T0 + at(5)), limit: 10 })).toEqual(["d", "b"]);
    expect(await ids({ source, unhandled: true, limit: 10 })).toEqual(["c", "b"]);
    expect(await ids({ source, status: "done", limit: 10 })).toEqual(["c", "b", "a"]);
  });
});

describe("findDeliveryById", () => {
  it("looks one id up across sources, newest first, ties in the order of the sources, and finds nothing for an unknown one", async () => {
    await seed("pg-find-one", "shared", 0);
    await seed("pg-find-two", "shared", 1);
    await seed("pg-find-three", "shared", 1);
    const found = await db((q) => findDeliveryById(q, ["pg-find-one", "pg-find-three", "pg-find-two", "pg-find-none"], "shared"));
    expect(found.map((delivery) => delivery.source)).toEqual(["pg-find-three", "pg-find-two", "pg-find-one"]);
    expect(await db((q) => findDeliveryById(q, ["pg-find-one"], "nope"))).toEqual([]);
    expect(await db((q) => findDeliveryById(q, [], "shared"))).toEqual([]);
  });
});

describe("the listing's query plan", () => {
  const after = { receivedAt: "2026-12-01T00:00:00.000Z", source: "stripe", id: "evt_1" };

  /**
   * The plan of a page with sequential scans, bitmap scans and sorts priced out: the index walk the
   * planner has for it (on a table this small it would rather read it all and sort).
   */
  async function planOf(query: ListingQuery): Promise<string> {
    const { sql, params } = listingStatement(query);
    return db(async (q) => {
      await q.query("BEGIN");
      try {
        await q.query("SET LOCAL enable_seqscan = off; SET LOCAL enable_bitmapscan = off; SET LOCAL enable_sort = off");
        const { rows } = await q.query<{ "QUERY PLAN": string }>(`EXPLAIN ${sql}`, params);
        return rows.map((row) => row["QUERY PLAN"]).join("\n");
      } finally {
        await q.query("ROLLBACK");
      }
    });
  }

  it("walks the age index newest first without a status, on the first page and after a cursor, sorting nothing", async () => {
    for (const plan of [await planOf({ limit: 50 }), await planOf({ limit: 50, after })]) {
      expect(plan).toMatch(/Index (Only )?Scan Backward using deliveries_by_age/);
      expect(plan).not.toMatch(/Sort/);
    }
  });

  it("walks the partial index of its status for failed, received and processing", async () => {
    expect(await planOf({ status: "failed", limit: 50, after })).toMatch(/Scan Backward using deliveries_failed/);
    expect(await planOf({ status: "received", limit: 50 })).toMatch(/Scan Backward using deliveries_pending/);
    expect(await planOf({ status: "processing", limit: 50, after, source: "stripe" })).toMatch(/Scan Backward using deliveries_pending/);
  });

  it("checks what no index serves on a bounded window of the age index, never the primary key for a source", async () => {
    for (const query of [{ status: "done" as const }, { eventType: "invoice.paid" }, { source: "stripe" }, { unhandled: true }]) {
      const plan = await planOf({ ...query, limit: 50, after });
      expect(plan).toMatch(/Scan Backward using deliveries_by_age/);
      expect(plan).not.toMatch(/deliveries_pkey|Seq Scan/);
    }
  });
});
