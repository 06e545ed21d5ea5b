import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env, exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { app } from "../../src/http/app";
import { sql } from "../../src/sql";
import { BASE_URL, standardHeaders, standardRequest } from "../helpers/signers";
import { count, deliveryRow, deliveryRows, storeName } from "../helpers/store-db";
import { faultyStore, pgError, unreachableStore } from "../helpers/store-faults";
import { runsOf } from "../helpers/recording-producer";

async function send(request: Request): Promise<{ status: number; json: Record<string, unknown> }> {
  const response = await exports.default.fetch(request);
  return { status: response.status, json: await response.json() };
}

/** Calls the app with a modified environment (a missing secret, a broken binding). */
async function sendWithEnv(request: Request, overrides: Record<string, unknown>) {
  const ctx = createExecutionContext();
  const response = await app.fetch(request, { ...env, ...overrides } as Env, ctx);
  await waitOnExecutionContext(ctx);
  return { status: response.status, json: (await response.json()) as Record<string, unknown> };
}

describe("POST /webhooks/:source", () => {
  it("stores a verified delivery and answers 200 stored", async () => {
    const result = await send(standardRequest('{"type":"invoice.paid","n":1}', { id: "msg_stored" }));
    expect(result).toEqual({ status: 200, json: { status: "stored", source: "standard", id: "msg_stored" } });
    const row = await deliveryRow("standard", "msg_stored");
    expect(row?.status).toBe("received");
    expect(row?.event_type).toBe("invoice.paid");
    expect(row?.attempts).toBe(0);
  });

  it("answers duplicate for the same delivery id and keeps one row", async () => {
    const first = await send(standardRequest('{"n":1}', { id: "msg_twice" }));
    const second = await send(standardRequest('{"n":1}', { id: "msg_twice" }));
    expect(first.json.status).toBe("stored");
    expect(second).toEqual({ status: 200, json: { status: "duplicate", source: "standard", id: "msg_twice" } });
    expect((await deliveryRows("standard")).filter((row) => row.id === "msg_twice")).toHaveLength(1);
  });

  it("stores exactly one row for 20 concurrent copies, answering one stored and nineteen duplicate", async () => {
    const body = '{"type":"charge","amount":100}';
    const headers = standardHeaders(body, { id: "msg_race" });
    const results = await Promise.all(
      Array.from({ length: 20 }, () => send(new Request(`${BASE_URL}/webhooks/standard`, { method: "POST", headers, body }))),
    );
    expect(results.every((result) => result.status === 200)).toBe(true);
    expect(results.filter((result) => result.json.status === "stored")).toHaveLength(1);
    expect(results.filter((result) => result.json.status === "duplicate")).toHaveLength(19);
    expect(await count(sql`SELECT COUNT(*) AS n FROM deliveries WHERE id = 'msg_race'`)).toBe(1);
  });

  it("enqueues each new delivery once, concurrent ones sharing one message (three queue operations for all)", async () => {
    const operations: unknown[][] = [];
    const producer = {
      async send(body: unknown) {
        operations.push([body]);
      },
      async sendBatch(messages: Iterable<MessageSendRequest>) {
        operations.push([...messages].map((message) => message.body));
      },
    };
    const requests = Array.from({ length: 10 }, (_, index) => standardRequest("{}", { id: `msg_burst_${index}` }));
    requests.push(standardRequest("{}", { id: "msg_burst_0" })); // a duplicate is not enqueued again
    const contexts = requests.map(() => createExecutionContext());
    const responses = await Promise.all(requests.map((request, index) => app.fetch(request, { ...env, DELIVERIES: producer } as unknown as Env, contexts[index])));
    await Promise.all(contexts.map((ctx) => waitOnExecutionContext(ctx)));
    expect(responses.every((response) => response.status === 200)).toBe(true);
    const messages = operations.flat();
    const sent = messages.flatMap(runsOf) as { id: string }[];
    expect(sent.map((ref) => ref.id).sort()).toEqual(Array.from({ length: 10 }, (_, index) => `msg_burst_${index}`).sort());
    // Each message is a run or a bundle of runs: fewer messages than deliveries, and exactly their parts.
    expect(messages.length).toBeLessThan(10);
    expect(sent.every((ref) => Object.keys(ref).sort().join() === "id,source")).toBe(true);
  });

  it("answers 200 stored when the queue send fails, leaving the row received for the sweeper", async () => {
    const attempts: string[] = [];
    const brokenQueue = {
      async send() {
        attempts.push("send");
        throw new Error("queue unavailable");
      },
      async sendBatch() {
        attempts.push("sendBatch");
        throw new Error("queue unavailable");
      },
    };
    const result = await sendWithEnv(standardRequest('{"n":1}', { id: "msg_lost_send" }), { DELIVERIES: brokenQueue });
    expect(result).toEqual({ status: 200, json: { status: "stored", source: "standard", id: "msg_lost_send" } });
    expect(attempts).toHaveLength(1); // the send was tried, and failed
    const row = await deliveryRow("standard", "msg_lost_send");
    expect([row?.status, row?.attempts]).toEqual(["received", 0]);
  });

  it("stores multi-byte UTF-8 and a byte-order mark byte for byte", async () => {
    const body = '\uFEFF{"name":"Zoë 東京 🚀","note":"naïve café"}';
    const result = await send(standardRequest(body, { id: "msg_utf8" }));
    expect(result.status).toBe(200);
    const stored = (await deliveryRow("standard", "msg_utf8"))!.body;
    expect(stored).toEqual(new TextEncoder().encode(body));
    expect(stored!.slice(0, 3)).toEqual(new Uint8Array([0xef, 0xbb, 0xbf]));
  });

  it("answers 404 for an unknown source", async () => {
    const result = await send(new Request(`${BASE_URL}/webhooks/nope`, { method: "POST", body: "{}" }));
    expect(result).toEqual({ status: 404, json: { error: "unknown_source", message: expect.any(String) } });
  });

  it("answers 405 with Allow: POST for another method on a known source", async () => {
    const response = await exports.default.fetch(new Request(`${BASE_URL}/webhooks/standard`, { method: "GET" }));
    expect(response.status).toBe(405);
    expect(response.headers.get("allow")).toBe("POST");
    expect(await response.json()).toMatchObject({ error: "method_not_allowed" });
  });

  it("answers 413 for a declared Content-Length over the limit", async () => {
    const body = "x".repeat(64);
    const result = await sendWithEnv(standardRequest(body), { MAX_BODY_BYTES: "32" });
    expect(result).toEqual({ status: 413, json: { error: "payload_too_large", message: expect.any(String) } });
  });

  it("answers 413 for a chunked body over the limit without reading it all", async () => {
    let pulled = 0;
    const chunk = new Uint8Array(16 * 1024).fill(0x61);
    const stream = new ReadableStream<Uint8Array>({
      pull(controller) {
        pulled++;
        if (pulled > 1_000) controller.close(); // 16 MB if read to the end
        else controller.enqueue(chunk);
      },
    });
    const request = new Request(`${BASE_URL}/webhooks/standard`, { method: "POST", body: stream, headers: standardHeaders("x") });
    expect(request.headers.get("content-length")).toBeNull();
    const result = await sendWithEnv(request, {});
    expect(result.status).toBe(413);
    expect(result.json.error).toBe("payload_too_large");
    // 1 MiB limit / 16 KiB chunks = 64 chunks, plus the one that crossed and a little read-ahead.
    expect(pulled).toBeLessThan(80);
  });

  it("answers 413 for a body that brings more than its declared Content-Length", async () => {
    // Only a Request built in code can do this (on the wire the length ends the body); the limit holds anyway.
    const body = "x".repeat(64);
    const stream = new Blob([body]).stream();
    const request = new Request(`${BASE_URL}/webhooks/standard`, {
      method: "POST",
      body: stream,
      headers: { ...standardHeaders(body), "content-length": "16" },
    });
    expect(request.headers.get("content-length")).toBe("16");
    const result = await sendWithEnv(request, { MAX_BODY_BYTES: "32" });
    expect(result).toEqual({ status: 413, json: { error: "payload_too_large", message: expect.any(String) } });
  });

  it("answers 503 source_not_configured when the source has no secret, storing nothing", async () => {
    const result = await sendWithEnv(standardRequest("{}", { id: "msg_nosecret" }), { STANDARD_WEBHOOK_SECRET: undefined });
    expect(result).toEqual({ status: 503, json: { error: "source_not_configured", message: expect.any(String) } });
    expect(await deliveryRow("standard", "msg_nosecret")).toBeNull();
  });

  it("answers 503 source_misconfigured when the secret is not a usable key", async () => {
    const result = await sendWithEnv(standardRequest("{}"), { STANDARD_WEBHOOK_SECRET: "whsec_!!!not-base64!!!" });
    expect(result.status).toBe(503);
    expect(result.json.error).toBe("source_misconfigured");
    expect(JSON.stringify(result.json)).not.toContain("not-base64");
  });

  it("answers 401 for a missing signature", async () => {
    const headers: Record<string, string> = standardHeaders("{}");
    delete headers["webhook-signature"];
    const result = await send(new Request(`${BASE_URL}/webhooks/standard`, { method: "POST", headers, body: "{}" }));
    expect(result.status).toBe(401);
    expect(result.json.error).toBe("invalid_signature");
  });

  it("answers 401 for a tampered body and stores nothing", async () => {
    const headers = standardHeaders('{"amount":1}', { id: "msg_tampered" });
    const result = await send(new Request(`${BASE_URL}/webhooks/standard`, { method: "POST", headers, body: '{"amount":1000}' }));
    expect(result.status).toBe(401);
    expect(await deliveryRow("standard", "msg_tampered")).toBeNull();
  });

  it("answers 401 for a stale timestamp", async () => {
    const result = await send(standardRequest("{}", { at: new Date(Date.now() - 10 * 60_000) }));
    expect(result.status).toBe(401);
    expect(result.json.message).toContain("too old");
  });

  it("answers 400 for a delivery id longer than 255 characters", async () => {
    const result = await send(standardRequest("{}", { id: "m".repeat(256) }));
    expect(result).toEqual({ status: 400, json: { error: "invalid_delivery_id", message: expect.any(String) } });
  });

  it("accepts a delivery id of exactly 255 characters", async () => {
    const result = await send(standardRequest("{}", { id: "m".repeat(255) }));
    expect(result.status).toBe(200);
  });

  it("answers 503 store_unavailable, never 200, when the database refuses the write, and shows none of its error", async () => {
    // Each database's own error, with a detail that must not leak: D1's binding throwing as it
    // prepares the insert; Postgres answering the insert with undefined_table (42P01).
    const refusing =
      storeName === "d1"
        ? {
            DB: {
              prepare() {
                throw new Error("D1_ERROR: no such table: deliveries SQLITE_ERROR secret-detail");
              },
            },
          }
        : faultyStore(() => pgError("42P01", 'relation "deliveries" does not exist secret-detail')).bindings;
    const result = await sendWithEnv(standardRequest("{}", { id: "msg_refused" }), refusing);
    expect(result).toEqual({ status: 503, json: { error: "store_unavailable", message: expect.any(String) } });
    expect(JSON.stringify(result.json)).not.toMatch(/SQLITE|secret-detail|deliveries|42P01/);
    expect(await deliveryRow("standard", "msg_refused")).toBeNull();
  });

  it("answers 503 store_unavailable, never 200, when the database cannot be reached", async () => {
    const down = unreachableStore();
    const results = await Promise.all(["msg_down_1", "msg_down_2"].map((id) => sendWithEnv(standardRequest("{}", { id }), down.bindings)));
    for (const result of results) expect(result).toEqual({ status: 503, json: { error: "store_unavailable", message: expect.any(String) } });
    expect(down.faulted.length).toBeGreaterThan(0);
    expect(await deliveryRow("standard", "msg_down_1")).toBeNull();
  });

  it("refuses to run with a malformed numeric var, answering a retryable 503 that does not echo the value", async () => {
    const result = await sendWithEnv(standardRequest("{}", { id: "msg_badvar" }), { MAX_BODY_BYTES: "lots-of-bytes" });
    expect(result).toEqual({ status: 503, json: { error: "config_invalid", message: expect.any(String) } });
    expect(JSON.stringify(result.json)).not.toContain("lots-of-bytes");
    expect(await deliveryRow("standard", "msg_badvar")).toBeNull();
  });
});

describe("other routes", () => {
  it("answers GET /health", async () => {
    expect(await send(new Request(`${BASE_URL}/health`))).toEqual({ status: 200, json: { status: "ok" } });
  });

  it("answers unknown routes with the JSON error shape", async () => {
    expect(await send(new Request(`${BASE_URL}/nowhere`))).toEqual({ status: 404, json: { error: "not_found", message: "no such route" } });
  });
});
