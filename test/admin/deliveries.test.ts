import { env, exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { listDeliveries, LISTING_WINDOW, listingStatement } from "../../src/store/listing";
import { insertDelivery } from "../../src/store/record";
import { standardRequest } from "../helpers/signers";
import { admin } from "./client";

const T0 = Date.parse("2026-12-01T00:00:00.000Z");

/** Stores a delivery of `source` received at T0 + `offsetMs`. */
async function seed(source: string, id: string, offsetMs: number, body: Uint8Array | string = "{}") {
  const bytes = typeof body === "string" ? new TextEncoder().encode(body) : body;
  await insertDelivery(env.DB, { source, id, eventType: "test.event", body: bytes, receivedAtMs: T0 + offsetMs }).run();
}

async function setStatus(source: string, id: string, status: string, error: string | null = null) {
  await env.DB.prepare("UPDATE deliveries SET status = ?3, error = ?4 WHERE source = ?1 AND id = ?2").bind(source, id, status, error).run();
}

/** Every page of a listing, following nextCursor. */
async function allPages(query: string): Promise<{ pages: number; ids: string[] }> {
  const ids: string[] = [];
  let cursor: string | null = null;
  let pages = 0;
  do {
    const result = await admin(`/deliveries?${query}${cursor ? `&cursor=${cursor}` : ""}`);
    expect(result.status).toBe(200);
    pages++;
    ids.push(...result.json.deliveries.map((delivery: { id: string }) => delivery.id));
    cursor = result.json.nextCursor;
  } while (cursor !== null && pages < 100);
  return { pages, ids };
}

describe("GET /admin/deliveries", () => {
  it("lists a delivery with every summary field and no body", async () => {
    await seed("list-fields", "one", 0);
    await setStatus("list-fields", "one", "failed", "PermanentError: no amount");
    const { status, json } = await admin("/deliveries?source=list-fields");
    expect(status).toBe(200);
    expect(json).toEqual({
      deliveries: [
        {
          source: "list-fields",
          id: "one",
          eventType: "test.event",
          status: "failed",
          attempts: 0,
          error: "PermanentError: no amount",
          handled: null,
          receivedAt: "2026-12-01T00:00:00.000Z",
          updatedAt: "2026-12-01T00:00:00.000Z",
        },
      ],
      nextCursor: null,
    });
  });

  it("lists newest first and filters by status and source", async () => {
    await seed("list-filter", "a", 1_000);
    await seed("list-filter", "b", 2_000);
    await seed("list-filter", "c", 3_000);
    await seed("list-filter-other", "d", 4_000);
    await setStatus("list-filter", "a", "failed", "boom");
    await setStatus("list-filter", "c", "failed", "boom");
    await setStatus("list-filter-other", "d", "failed", "boom");
    const failed = await admin("/deliveries?status=failed&source=list-filter");
    expect(failed.json.deliveries.map((delivery: { id: string }) => delivery.id)).toEqual(["c", "a"]);
    const all = await admin("/deliveries?source=list-filter");
    expect(all.json.deliveries.map((delivery: { id: string }) => delivery.id)).toEqual(["c", "b", "a"]);
  });

  it("pages through every delivery once, with ties on received_at broken by source and id", async () => {
    // 25 deliveries sharing 5 timestamps: the cursor must carry more than the time.
    for (let index = 0; index < 25; index++) await seed("list-pages", `p${String(index).padStart(2, "0")}`, Math.floor(index / 5) * 1_000);
    const { pages, ids } = await allPages("source=list-pages&limit=4");
    expect(pages).toBe(7);
    expect(ids).toHaveLength(25);
    expect(new Set(ids).size).toBe(25);
  });

  it("keeps pages stable while new deliveries arrive between them", async () => {
    for (let index = 0; index < 6; index++) await seed("list-stable", `s${index}`, index * 1_000);
    const first = await admin("/deliveries?source=list-stable&limit=3");
    expect(first.json.deliveries.map((delivery: { id: string }) => delivery.id)).toEqual(["s5", "s4", "s3"]);
    await seed("list-stable", "newest", 60_000);
    const second = await admin(`/deliveries?source=list-stable&limit=3&cursor=${first.json.nextCursor}`);
    expect(second.json.deliveries.map((delivery: { id: string }) => delivery.id)).toEqual(["s2", "s1", "s0"]);
    expect(second.json.nextCursor).toBeNull();
  });

  it("returns 50 deliveries by default", async () => {
    for (let index = 0; index < 51; index++) await seed("list-default", `d${index}`, index);
    const result = await admin("/deliveries?source=list-default");
    expect(result.json.deliveries).toHaveLength(50);
    expect(result.json.nextCursor).toEqual(expect.any(String));
  });

  it.each([
    ["limit=0", "limit"],
    ["limit=201", "limit"],
    ["limit=ten", "limit"],
    ["limit=2.5", "limit"],
    ["status=lost", "status"],
    ["source=", "source"],
    ["cursor=not-a-cursor!", "cursor"],
    ["cursor=bm90IGpzb24", "cursor"],
  ])("answers 400 bad_request for %s, naming the parameter", async (query, parameter) => {
    const result = await admin(`/deliveries?${query}`);
    expect(result.status).toBe(400);
    expect(result.json).toEqual({ error: "bad_request", message: expect.stringContaining(parameter) });
  });

  it("accepts the maximum limit of 200", async () => {
    expect((await admin("/deliveries?limit=200")).status).toBe(200);
  });
});

describe("GET /admin/deliveries/:source/:id", () => {
  it("returns a delivery received through the webhook route with its body as text and base64", async () => {
    const body = '\uFEFF{"type":"invoice.paid","name":"Zoë 東京"}';
    expect((await exports.default.fetch(standardRequest(body, { id: "msg_show" }))).status).toBe(200);
    const result = await admin("/deliveries/standard/msg_show");
    expect(result.status).toBe(200);
    expect(result.json).toMatchObject({ source: "standard", id: "msg_show", eventType: "invoice.paid", status: "received", attempts: 0 });
    const bytes = new TextEncoder().encode(body);
    expect(result.json.body).toEqual({ bytes: bytes.byteLength, text: body, base64: btoa(String.fromCharCode(...bytes)) });
  });

  it("returns text null and the exact bytes in base64 for a body that is not UTF-8", async () => {
    await seed("show-binary", "bin", 0, new Uint8Array([0xff, 0xfe, 0x00, 0x41]));
    const result = await admin("/deliveries/show-binary/bin");
    expect(result.json.body).toEqual({ bytes: 4, text: null, base64: "//4AQQ==" });
  });

  it("returns body null once retention cleared it", async () => {
    await seed("show-pruned", "gone", 0);
    await env.DB.prepare("UPDATE deliveries SET status = 'done', handled = 1, body = NULL WHERE source = 'show-pruned'").run();
    const result = await admin("/deliveries/show-pruned/gone");
    expect(result.json).toMatchObject({ status: "done", handled: true, body: null });
  });

  it("finds a delivery whose id holds characters that need escaping in a path", async () => {
    await seed("show-escaped", "a/b c?d", 0);
    const result = await admin(`/deliveries/show-escaped/${encodeURIComponent("a/b c?d")}`);
    expect(result.status).toBe(200);
    expect(result.json.id).toBe("a/b c?d");
  });

  it("answers 404 not_found for an unknown delivery", async () => {
    const result = await admin("/deliveries/standard/msg_unknown");
    expect(result).toMatchObject({ status: 404, json: { error: "not_found", message: "no delivery standard/msg_unknown" } });
  });
});

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

  it("walks the partial index of its status for failed, received and processing, and the age index for done", async () => {
    // migrations/0006: a partial index only pays for the rows in it; done rows are nearly all rows.
    expect(await planOf({ status: "failed", limit: 50, after })).toEqual(["SEARCH deliveries USING INDEX deliveries_failed ((received_at,source,id)<(?,?,?))"]);
    expect(await planOf({ status: "received", limit: 50 })).toEqual(["SCAN deliveries USING INDEX deliveries_pending"]);
    expect(await planOf({ status: "processing", limit: 50, after })).toEqual(["SEARCH deliveries USING INDEX deliveries_pending ((received_at,source,id)<(?,?,?))"]);
  });

  it("keeps to the status's partial index with a source too, and to a bounded window of the age index for what no index serves", async () => {
    // Not the primary key for the source (all its rows, then sorted), as `source = ?` would have it.
    for (const status of ["failed", "received"] as const) {
      const plan = (await planOf({ status, source: "stripe", limit: 50, after })).join("\n");
      expect(plan).toMatch(/USING (COVERING )?INDEX deliveries_(failed|pending)/);
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

describe("GET /admin/deliveries filters (event type, received time)", () => {
  it("narrows by event type and a time range given in any offset, and refuses a time that is not one", async () => {
    const source = "list-filters";
    const store = (id: string, type: string, minutes: number) =>
      insertDelivery(env.DB, { source, id, eventType: type, body: new TextEncoder().encode("{}"), receivedAtMs: T0 + minutes * 60_000 }).run();
    await store("f-1", "invoice.paid", 0);
    await store("f-2", "invoice.paid", 30);
    await store("f-3", "charge.failed", 60);
    const ids = async (query: string) => ((await admin(`/deliveries?source=${source}&${query}`)).json.deliveries as { id: string }[]).map((delivery) => delivery.id);
    expect(await ids("eventType=invoice.paid")).toEqual(["f-2", "f-1"]);
    // 01:00+01:00 is 00:00Z: since is inclusive, until exclusive.
    expect(await ids(`since=${encodeURIComponent("2026-12-01T00:30:00Z")}&until=${encodeURIComponent("2026-12-01T02:00:00+01:00")}`)).toEqual(["f-2"]);
    await env.DB.prepare("UPDATE deliveries SET status = 'done', handled = (id = 'f-1') WHERE source = ?1").bind(source).run();
    expect(await ids("unhandled=true")).toEqual(["f-3", "f-2"]);
    expect(await ids("unhandled=false")).toEqual(["f-3", "f-2", "f-1"]);
    const bad = await admin(`/deliveries?source=${source}&since=yesterday`);
    expect(bad.status).toBe(400);
    expect(bad.json.message).toMatch(/^since: /);
  });
});
