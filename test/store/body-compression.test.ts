// Bodies are stored compressed (src/store/body-encoding.ts) and every reader sees the bytes as
// received, byte for byte: the handler's ctx.rawBody (the claim), a forward, the dashboard's
// download, the admin API, a replay. On both stores (test/store-suites.ts). The stored form is
// checked with the runtime's own DecompressionStream, not with the code under test.
import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env, exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { defineHandlers, type Handler } from "../../src/handler-api";
import { createSessionValue } from "../../src/http/ui/session";
import { sql } from "../../src/sql";
import { backendCalls, bytesOf, forwardingTo, planBackend } from "../helpers/forward-backend";
import type { RunRef } from "../../src/delivery-ref";
import { capturingQueue, consume } from "../helpers/processing";
import { BASE_URL, githubSignature, post } from "../helpers/provider-signers";
import { recordingProducer } from "../helpers/recording-producer";
import { exec, firstRow, recordDelivery, storedBody } from "../helpers/store-db";

const SOURCE = "standard";
/** MAX_BODY_BYTES's default (wrangler.toml): the largest body the receiver takes. */
const LIMIT = Number(env.MAX_BODY_BYTES);

/** JSON of exactly `length` bytes (at least 64), shaped like a webhook: repeated keys, URLs, ids, numbers, some UTF-8. */
function webhookJson(length: number, seed = 1): Uint8Array {
  const encoder = new TextEncoder();
  const [head, tail] = ['{"type":"invoice.paid","pad":"', '","items":['];
  const close = "]}";
  const items: string[] = [];
  let size = encoder.encode(head + tail + close).byteLength;
  for (let index = 0; ; index++) {
    const item = JSON.stringify({ id: `item_${seed}_${index}`, url: `https://api.example.com/v1/items/item_${seed}_${index}`, amount: (index * 7919) % 100_000, currency: "usd", note: "crème brûlée ☕" });
    const more = encoder.encode(item).byteLength + (items.length > 0 ? 1 : 0);
    if (size + more > length) break;
    items.push(item);
    size += more;
  }
  const bytes = encoder.encode(head + "x".repeat(length - size) + tail + items.join(",") + close);
  expect(bytes.byteLength).toBe(length);
  JSON.parse(new TextDecoder().decode(bytes));
  return bytes;
}

/** Random bytes: they do not compress, so they are stored as received. */
function randomBytes(length: number): Uint8Array {
  const bytes = new Uint8Array(length);
  for (let at = 0; at < length; at += 65_536) crypto.getRandomValues(bytes.subarray(at, Math.min(length, at + 65_536)));
  return bytes;
}

/** Every byte value, over and over: binary that compresses. */
function repeatingBinary(length: number): Uint8Array {
  return Uint8Array.from({ length }, (_, index) => (index * 31 + (index >> 9)) & 0xff);
}

const same = (actual: Uint8Array | null | undefined, expected: Uint8Array) =>
  actual !== null && actual !== undefined && actual.byteLength === expected.byteLength && actual.every((byte, index) => byte === expected[index]);

/** Inflates raw DEFLATE with the runtime's DecompressionStream: an oracle apart from node:zlib. */
async function inflateIndependently(bytes: Uint8Array): Promise<Uint8Array> {
  const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("deflate-raw"));
  return new Uint8Array(await new Response(stream).arrayBuffer());
}

/**
 * The handler's ctx.rawBody of a run of `refs` through the real consumer (with `overrides`, e.g.
 * forwarding: the code handler and the forward are then two subscribers, and the delivery fans out
 * to a run each, consumed here in turn). Every run ends done.
 */
async function rawBodyOfRun(refs: readonly RunRef[], overrides: Partial<Env> = {}): Promise<Uint8Array> {
  let seen: Uint8Array | null = null;
  const capture: Handler = (_event, ctx) => {
    seen = new Uint8Array(ctx.rawBody);
    return [];
  };
  const handlers = defineHandlers({ [refs[0]!.source]: { "*": capture } });
  const queue = capturingQueue();
  for (let batch = [...refs]; batch.length > 0; batch = queue.take()) {
    const { outcomes } = await consume(batch, handlers, { ...overrides, DELIVERIES: queue.producer });
    for (const outcome of outcomes) expect(["done", "fanned"]).toContain(outcome.reason);
  }
  return seen!;
}

/** The dashboard's download of the body (GET /ui/deliveries/:source/:id/body, signed in). */
async function downloaded(ref: { source: string; id: string }): Promise<Uint8Array> {
  const cookie = `__Secure-inbox_session=${await createSessionValue(env.ADMIN_TOKEN, Date.now())}`;
  const response = await exports.default.fetch(new Request(`${BASE_URL}/ui/deliveries/${ref.source}/${encodeURIComponent(ref.id)}/body`, { headers: { cookie } }));
  expect(response.status).toBe(200);
  return new Uint8Array(await response.arrayBuffer());
}

/** The admin API's view of the body (base64 of the bytes). */
async function adminBody(ref: { source: string; id: string }): Promise<{ bytes: number; base64: string }> {
  const response = await exports.default.fetch(
    new Request(`${BASE_URL}/admin/deliveries/${ref.source}/${encodeURIComponent(ref.id)}`, { headers: { authorization: `Bearer ${env.ADMIN_TOKEN}` } }),
  );
  expect(response.status).toBe(200);
  return ((await response.json()) as { body: { bytes: number; base64: string } }).body;
}

/** A forced replay through the admin API: the queue messages it sends, recorded (the test consumes them itself). */
async function replay(ref: { source: string; id: string }): Promise<RunRef[]> {
  const { queue, sent } = recordingProducer();
  const ctx = createExecutionContext();
  const request = new Request(`${BASE_URL}/admin/deliveries/${ref.source}/${encodeURIComponent(ref.id)}/replay?force=true`, {
    method: "POST",
    headers: { authorization: `Bearer ${env.ADMIN_TOKEN}` },
  });
  const { app } = await import("../../src/http/app");
  const response = await app.fetch(request, { ...env, DELIVERIES: queue }, ctx);
  await waitOnExecutionContext(ctx);
  expect(response.status).toBe(202);
  return sent as RunRef[];
}

const BODIES: [string, () => Uint8Array, "deflate-raw" | null][] = [
  ["JSON", () => webhookJson(6_000), "deflate-raw"],
  ["compressible binary", () => repeatingBinary(20_000), "deflate-raw"],
  ["random binary", () => randomBytes(4_096), null],
  ["empty", () => new Uint8Array(0), null],
  ["short JSON", () => new TextEncoder().encode('{"ok":true}'), null],
  ["JSON at MAX_BODY_BYTES", () => webhookJson(LIMIT, 2), "deflate-raw"],
  ["random binary at MAX_BODY_BYTES", () => randomBytes(LIMIT), null],
];

describe("bodies compressed at rest", () => {
  for (const [name, make, encoding] of BODIES) {
    it(`${name}: stored ${encoding ?? "as received"}, and the claim, a forward, the download, the admin API and a replay see the bytes as received`, async () => {
      const body = make();
      const ref = { source: SOURCE, id: `compress-${name.replaceAll(" ", "-")}` };
      expect(await recordDelivery({ ...ref, eventType: "invoice.paid", body, receivedAtMs: Date.now() })).toBe("stored");

      const stored = (await storedBody(ref.source, ref.id))!;
      expect(stored.encoding).toBe(encoding);
      if (encoding === null) expect(same(stored.body, body)).toBe(true);
      else {
        expect(stored.body!.byteLength).toBeLessThan(body.byteLength / 2);
        expect(same(await inflateIndependently(stored.body!), body)).toBe(true);
      }

      const url = await planBackend(`/compress/${ref.id}`, { status: 200 });
      const forwarding = forwardingTo(SOURCE, url);
      expect(same(await rawBodyOfRun([ref], forwarding), body)).toBe(true);
      const [call] = (await backendCalls(`/compress/${ref.id}`)).calls;
      expect(same(bytesOf(call!.body), body)).toBe(true);

      expect(same(await downloaded(ref), body)).toBe(true);
      const viaAdmin = await adminBody(ref);
      expect(viaAdmin.bytes).toBe(body.byteLength);
      expect(same(bytesOf(viaAdmin.base64), body)).toBe(true);

      expect(same(await rawBodyOfRun(await replay(ref), forwarding), body)).toBe(true);
      const calls = (await backendCalls(`/compress/${ref.id}`)).calls;
      expect(calls).toHaveLength(2);
      expect(same(bytesOf(calls[1]!.body), body)).toBe(true);
    });
  }

  it("reads a row stored before compression (no encoding) as it is, in the claim and the download", async () => {
    const ref = { source: SOURCE, id: "compress-old-row" };
    const body = webhookJson(3_000, 3);
    const now = new Date().toISOString();
    await exec(
      sql`INSERT INTO deliveries (source, id, event_type, status, attempts, body, received_at, updated_at) VALUES (${ref.source}, ${ref.id}, ${"invoice.paid"}, 'received', 0, ${body}, ${now}, ${now})`,
    );
    expect(await storedBody(ref.source, ref.id)).toEqual({ body, encoding: null });
    expect(same(await rawBodyOfRun([ref]), body)).toBe(true);
    expect(same(await downloaded(ref), body)).toBe(true);
  });

  it("retries a delivery whose stored body cannot be inflated, and answers the download with a bare 500: never bytes that are not the body", async () => {
    const ref = { source: SOURCE, id: "compress-unreadable" };
    const now = new Date().toISOString();
    // An encoded body that is not DEFLATE: a corrupted row, or one written by a newer version's encoding.
    await exec(
      sql`INSERT INTO deliveries (source, id, event_type, status, attempts, body, body_encoding, received_at, updated_at) VALUES (${ref.source}, ${ref.id}, ${"invoice.paid"}, 'received', 0, ${new Uint8Array([0xff, 0xff, 0xff, 0xff])}, ${"deflate-raw"}, ${now}, ${now})`,
    );
    let runs = 0;
    const { outcomes } = await consume([ref], defineHandlers({ [SOURCE]: { "*": () => (runs++, []) } }));
    expect(outcomes[0]).toMatchObject({ action: "retry", reason: "infrastructure" });
    expect(runs).toBe(0);
    expect(await firstRow(sql`SELECT status, attempts FROM deliveries WHERE source = ${ref.source} AND id = ${ref.id}`)).toEqual({ status: "received", attempts: 0 });
    const response = await exports.default.fetch(
      new Request(`${BASE_URL}/admin/deliveries/${ref.source}/${ref.id}`, { headers: { authorization: `Bearer ${env.ADMIN_TOKEN}` } }),
    );
    expect(response.status).toBe(500);
    expect(await response.json()).toEqual({ error: "internal_error", message: "internal error" });
  });

  it("keeps the dedup digest of the bytes as received: a copy under a new id is a duplicate, and the digest is their SHA-256", async () => {
    const text = new TextDecoder().decode(webhookJson(8_000, 4));
    const headers = async (delivery: string) => ({
      "x-hub-signature-256": await githubSignature(text),
      "x-github-delivery": delivery,
      "x-github-event": "push",
      "content-type": "application/json",
    });
    expect((await post("github", text, await headers("compress-digest-1"))).json.status).toBe("stored");
    expect((await storedBody("github", "compress-digest-1"))!.encoding).toBe("deflate-raw");
    expect((await post("github", text, await headers("compress-digest-2"))).json.status).toBe("duplicate");
    const row = await firstRow<{ content_digest: Uint8Array }>(sql`SELECT content_digest FROM deliveries WHERE source = 'github' AND id = 'compress-digest-1'`);
    const expected = new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text)));
    expect([...row!.content_digest]).toEqual([...expected]);
  });

  it("stores a body received through the receiver compressed, and hands it to the handler byte for byte", async () => {
    const text = new TextDecoder().decode(webhookJson(LIMIT, 5));
    const reply = await post("github", text, {
      "x-hub-signature-256": await githubSignature(text),
      "x-github-delivery": "compress-receiver",
      "x-github-event": "push",
      "content-type": "application/json",
    });
    expect(reply.json.status).toBe("stored");
    const stored = (await storedBody("github", "compress-receiver"))!;
    expect(stored.encoding).toBe("deflate-raw");
    expect(stored.body!.byteLength).toBeLessThan(LIMIT / 4);
    expect(same(await rawBodyOfRun([{ source: "github", id: "compress-receiver" }]), new TextEncoder().encode(text))).toBe(true);
  });
});
