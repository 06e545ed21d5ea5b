import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { PermanentError } from "../../../src/handler-api";
import { defineHandlers } from "../../../src/handler-api";
import type { DeliveryRef } from "../../../src/processing/messages";
import { sql } from "../../../src/sql";
import { openStore } from "../../../src/store";
import { consume, storeDelivery } from "../../helpers/processing";
import { deliveryRow, exec } from "../../helpers/store-db";
import { recordingProducer } from "../../helpers/recording-producer";
import { adminWithEnv } from "./client";

/** Calls the admin API with a recording DELIVERIES queue. */
async function adminRecording(path: string, body?: unknown) {
  const { sent, queue } = recordingProducer();
  const result = await adminWithEnv(path, { DELIVERIES: queue }, { method: "POST", body });
  return { ...result, sent };
}

const failing = defineHandlers({ replays: { "*": () => Promise.reject(new PermanentError("no amount")) } });
const succeeding = defineHandlers({ replays: { "*": () => [] } });

/** A delivery that went through the real consumer and failed (lease settled, row failed). */
async function failedDelivery(id: string, source = "replays"): Promise<DeliveryRef> {
  const ref = { source, id };
  await storeDelivery(ref, { n: 1 });
  const handlers = source === "replays" ? failing : defineHandlers({ [source]: { "*": () => Promise.reject(new PermanentError("no amount")) } });
  // Its dead letter is kept out of the runtime's dead-letter consumer, which would otherwise
  // record it (again) at an arbitrary later moment, possibly after a test replayed the delivery.
  const { outcomes } = await consume([ref], handlers, { DEAD_LETTERS: recordingProducer().queue });
  expect(outcomes.map((outcome) => outcome.reason)).toEqual(["failed"]);
  return ref;
}

async function doneDelivery(id: string): Promise<DeliveryRef> {
  const ref = { source: "replays", id };
  await storeDelivery(ref, { n: 1 });
  const { outcomes } = await consume([ref], succeeding);
  expect(outcomes.map((outcome) => outcome.reason)).toEqual(["done"]);
  return ref;
}

const replayPath = (ref: DeliveryRef, query = "") => `/deliveries/${ref.source}/${encodeURIComponent(ref.id)}/replay${query}`;

describe("POST /admin/deliveries/:source/:id/replay", () => {
  it("puts a failed delivery back to received with attempts, error and handled reset, and enqueues it", async () => {
    const ref = await failedDelivery("r-failed");
    const before = await deliveryRow(ref.source, ref.id);
    expect(before).toMatchObject({ status: "failed", attempts: 1, error: "PermanentError: no amount" });
    const result = await adminRecording(replayPath(ref));
    expect(result.status).toBe(202);
    expect(result.json).toEqual({ status: "replayed", source: "replays", id: "r-failed" });
    expect(result.sent).toEqual([ref]);
    const after = await deliveryRow(ref.source, ref.id);
    expect(after).toMatchObject({ status: "received", attempts: 0, error: null, handled: null });
    // Raised to the replay's time: every token of the previous life is below it, every later claim's above.
    expect(after!.lease_token!).toBeGreaterThanOrEqual(Math.max(before!.lease_token ?? 0, Date.parse(after!.updated_at)));
  });

  it("lets the replayed delivery be processed again from attempt 1, past the lease's settled hint", async () => {
    const ref = await failedDelivery("r-again");
    // Without a replay, the settled lease turns a second message away.
    expect((await consume([ref], succeeding)).outcomes.map((outcome) => outcome.reason)).toEqual(["settled"]);
    expect((await adminRecording(replayPath(ref))).status).toBe(202);
    const { outcomes } = await consume([ref], succeeding);
    expect(outcomes.map((outcome) => outcome.reason)).toEqual(["done"]);
    expect(await deliveryRow(ref.source, ref.id)).toMatchObject({ status: "done", attempts: 1, handled: 1, error: null });
  });

  it("answers 409 conflict for a done delivery without force, and leaves it done", async () => {
    const ref = await doneDelivery("r-done");
    const result = await adminRecording(replayPath(ref));
    expect(result.status).toBe(409);
    expect(result.json).toEqual({ error: "conflict", message: expect.stringContaining("force=true") });
    expect(result.sent).toEqual([]);
    expect(await deliveryRow(ref.source, ref.id)).toMatchObject({ status: "done", attempts: 1 });
  });

  it("replays a done delivery with ?force=true, and it runs again", async () => {
    const ref = await doneDelivery("r-forced");
    const result = await adminRecording(replayPath(ref, "?force=true"));
    expect(result.status).toBe(202);
    expect(await deliveryRow(ref.source, ref.id)).toMatchObject({ status: "received", attempts: 0, handled: null });
    expect((await consume([ref], succeeding)).outcomes.map((outcome) => outcome.reason)).toEqual(["done"]);
  });

  it.each(["received", "processing"])("answers 409 conflict for a %s delivery and enqueues nothing", async (status) => {
    const ref = { source: "replays", id: `r-${status}` };
    await storeDelivery(ref);
    await exec(sql`UPDATE deliveries SET status = ${status} WHERE source = ${ref.source} AND id = ${ref.id}`);
    const result = await adminRecording(replayPath(ref, "?force=true"));
    expect(result.status).toBe(409);
    expect(result.json.message).toContain(`is ${status}`);
    expect(result.sent).toEqual([]);
    expect((await deliveryRow(ref.source, ref.id))?.status).toBe(status);
  });

  it.each([
    ["done", "?force=true"],
    ["done", ""],
    ["failed", ""],
  ])("answers 409 body_pruned for a %s delivery whose body was cleared (query %j), and changes nothing", async (status, query) => {
    const ref = { source: "replays", id: `r-pruned-${status}-${query.length}` };
    await storeDelivery(ref, { n: 1 });
    await exec(sql`UPDATE deliveries SET status = ${status}, body = NULL WHERE source = ${ref.source} AND id = ${ref.id}`);
    const before = await deliveryRow(ref.source, ref.id);
    const result = await adminRecording(replayPath(ref, query));
    expect(result.status).toBe(409);
    expect(result.json).toEqual({
      error: "body_pruned",
      message: `the body of delivery replays/${ref.id} was cleared by retention; it cannot be replayed`,
    });
    expect(result.sent).toEqual([]);
    expect(await deliveryRow(ref.source, ref.id)).toEqual(before);
  });

  it("answers 404 not_found for an unknown delivery", async () => {
    const result = await adminRecording(replayPath({ source: "replays", id: "r-unknown" }));
    expect(result).toMatchObject({ status: 404, json: { error: "not_found" }, sent: [] });
  });

  it("answers 400 for a force value other than true or false", async () => {
    const ref = await failedDelivery("r-badforce");
    const result = await adminRecording(replayPath(ref, "?force=yes"));
    expect(result).toMatchObject({ status: 400, json: { error: "bad_request" } });
    expect((await deliveryRow(ref.source, ref.id))?.status).toBe("failed");
  });

  it("replays once when two replays of the same delivery race: one 202, one 409", async () => {
    const ref = await failedDelivery("r-race");
    const results = await Promise.all([adminRecording(replayPath(ref)), adminRecording(replayPath(ref))]);
    expect(results.map((result) => result.status).sort()).toEqual([202, 409]);
    expect(results.flatMap((result) => result.sent)).toEqual([ref]);
  });
});

describe("POST /admin/replay", () => {
  it("replays failed deliveries of one source a bounded number at a time, saying how many remain", async () => {
    for (let index = 0; index < 5; index++) await failedDelivery(`b-${index}`, "bulk-a");
    await failedDelivery("b-other", "bulk-b");
    const first = await adminRecording("/replay", { status: "failed", source: "bulk-a", limit: 3 });
    expect(first.status).toBe(200);
    expect(first.json).toEqual({ replayed: 3, remaining: 2 });
    expect(first.sent).toHaveLength(3);
    const second = await adminRecording("/replay", { status: "failed", source: "bulk-a", limit: 3 });
    expect(second.json).toEqual({ replayed: 2, remaining: 0 });
    const sentIds = [...first.sent, ...second.sent].map((message) => (message as DeliveryRef).id).sort();
    expect(sentIds).toEqual(["b-0", "b-1", "b-2", "b-3", "b-4"]);
    expect((await deliveryRow("bulk-b", "b-other"))?.status).toBe("failed");
  });

  it("resets the lease of each replayed delivery, so each is processed again", async () => {
    const refs = [await failedDelivery("b-lease-1", "bulk-lease"), await failedDelivery("b-lease-2", "bulk-lease")];
    expect((await adminRecording("/replay", { status: "failed", source: "bulk-lease" })).json).toEqual({ replayed: 2, remaining: 0 });
    const { outcomes } = await consume(refs, defineHandlers({ "bulk-lease": { "*": () => [] } }));
    expect(outcomes.map((outcome) => outcome.reason)).toEqual(["done", "done"]);
  });

  it("replays a failed delivery with its body after body retention passed it, and skips one whose body was cleared by hand", async () => {
    const kept = { source: "bulk-pruned", id: "kept" };
    const cleared = { source: "bulk-pruned", id: "cleared" };
    for (const ref of [kept, cleared]) await storeDelivery(ref, { n: 1 });
    // Received long before the body cutoff below; every other delivery of this file comes after it.
    await exec(sql`UPDATE deliveries SET status = 'failed', error = 'boom', received_at = ${"2026-01-01T00:00:00.000Z"} WHERE source = 'bulk-pruned'`);
    await exec(sql`UPDATE deliveries SET body = NULL WHERE source = 'bulk-pruned' AND id = 'cleared'`);
    const body = (await deliveryRow(kept.source, kept.id))!.body;
    await openStore(env).applyRetention(0, Date.parse("2026-01-08T00:00:00.000Z"), 1_000);
    const result = await adminRecording("/replay", { status: "failed", source: "bulk-pruned" });
    // The one without a body is not counted as remaining: a caller looping while some remain stops.
    expect(result.json).toEqual({ replayed: 1, remaining: 0 });
    expect(result.sent).toEqual([kept]);
    expect(await deliveryRow(kept.source, kept.id)).toMatchObject({ status: "received", body });
    expect(await deliveryRow(cleared.source, cleared.id)).toMatchObject({ status: "failed", body: null });
  });

  it("replays at most 100 per call by default", async () => {
    const refs = Array.from({ length: 101 }, (_, index) => ({ source: "bulk-many", id: `m-${index}` }));
    for (const ref of refs) await storeDelivery(ref);
    await exec(sql`UPDATE deliveries SET status = 'failed', error = 'boom' WHERE source = 'bulk-many'`);
    const result = await adminRecording("/replay", { status: "failed", source: "bulk-many" });
    expect(result.json).toEqual({ replayed: 100, remaining: 1 });
    expect(result.sent).toHaveLength(100);
  });

  it.each([
    ["another status", { status: "done" }],
    ["no status", { source: "bulk-a" }],
    ["a limit over 500", { status: "failed", limit: 501 }],
    ["a limit of 0", { status: "failed", limit: 0 }],
    ["an unknown field", { status: "failed", sources: "bulk-a" }],
  ])("answers 400 bad_request for a body with %s", async (_case, body) => {
    const result = await adminRecording("/replay", body);
    expect(result).toMatchObject({ status: 400, json: { error: "bad_request" }, sent: [] });
  });

  it("answers 400 bad_request for a missing body", async () => {
    const result = await adminWithEnv("/replay", {}, { method: "POST", headers: { "content-type": "application/json" } });
    expect(result).toMatchObject({ status: 400, json: { error: "bad_request" } });
  });
});

describe("POST /admin/replay with the listing's filters", () => {
  it("replays only the failed deliveries of the event type and time range asked for", async () => {
    const [a, b] = [await failedDelivery("bf-type-a", "bulk-filter"), await failedDelivery("bf-type-b", "bulk-filter")];
    await exec(sql`UPDATE deliveries SET event_type = 'invoice.paid' WHERE source = ${a.source} AND id = ${a.id}`);
    const result = await adminRecording("/replay", { status: "failed", source: "bulk-filter", eventType: "invoice.paid" });
    expect(result.json).toEqual({ replayed: 1, remaining: 0 });
    expect(result.sent).toEqual([a]);
    expect((await deliveryRow(b.source, b.id))?.status).toBe("failed");
    // A range that ends before b was received takes nothing.
    const none = await adminRecording("/replay", { status: "failed", source: "bulk-filter", until: "2000-01-01T00:00:00Z" });
    expect(none.json).toEqual({ replayed: 0, remaining: 0 });
    expect((await deliveryRow(b.source, b.id))?.status).toBe("failed");
  });
});
