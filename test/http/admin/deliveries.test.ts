import { exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { sql } from "../../../src/sql";
import { standardRequest } from "../../helpers/signers";
import { exec, recordDelivery } from "../../helpers/store-db";
import { admin } from "./client";

const T0 = Date.parse("2026-12-01T00:00:00.000Z");

/** Stores a delivery of `source` received at T0 + `offsetMs`. */
async function seed(source: string, id: string, offsetMs: number, body: Uint8Array | string = "{}") {
  const bytes = typeof body === "string" ? new TextEncoder().encode(body) : body;
  await recordDelivery({ source, id, eventType: "test.event", body: bytes, receivedAtMs: T0 + offsetMs });
}

async function setStatus(source: string, id: string, status: string, error: string | null = null) {
  await exec(sql`UPDATE deliveries SET status = ${status}, error = ${error} WHERE source = ${source} AND id = ${id}`);
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
          duplicates: 0,
          lastDuplicateAt: null,
          subscriber: null,
          fanout: null,
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
    await exec(sql`UPDATE deliveries SET status = 'done', handled = ${true}, body = NULL WHERE source = 'show-pruned'`);
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

describe("GET /admin/deliveries filters (event type, received time)", () => {
  it("narrows by event type and a time range given in any offset, and refuses a time that is not one", async () => {
    const source = "list-filters";
    const store = (id: string, type: string, minutes: number) =>
      recordDelivery({ source, id, eventType: type, body: new TextEncoder().encode("{}"), receivedAtMs: T0 + minutes * 60_000 });
    await store("f-1", "invoice.paid", 0);
    await store("f-2", "invoice.paid", 30);
    await store("f-3", "charge.failed", 60);
    const ids = async (query: string) => ((await admin(`/deliveries?source=${source}&${query}`)).json.deliveries as { id: string }[]).map((delivery) => delivery.id);
    expect(await ids("eventType=invoice.paid")).toEqual(["f-2", "f-1"]);
    // 01:00+01:00 is 00:00Z: since is inclusive, until exclusive.
    expect(await ids(`since=${encodeURIComponent("2026-12-01T00:30:00Z")}&until=${encodeURIComponent("2026-12-01T02:00:00+01:00")}`)).toEqual(["f-2"]);
    await exec(sql`UPDATE deliveries SET status = 'done', handled = (id = 'f-1') WHERE source = ${source}`);
    expect(await ids("unhandled=true")).toEqual(["f-3", "f-2"]);
    expect(await ids("unhandled=false")).toEqual(["f-3", "f-2", "f-1"]);
    const bad = await admin(`/deliveries?source=${source}&since=yesterday`);
    expect(bad.status).toBe(400);
    expect(bad.json.message).toMatch(/^since: /);
  });
});
