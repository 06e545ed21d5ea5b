import { afterEach, describe, expect, it, vi } from "vitest";
import { sql } from "../../../src/sql";
import { exec, recordDelivery } from "../../helpers/store-db";
import { admin } from "./client";

/** The tests' clock: the stats route reads Date.now(), which the age test pins here. */
const NOW = Date.parse("2026-12-01T12:00:00.000Z");

/** Stores a delivery received `ageSeconds` before NOW, then sets its state as processing would have. */
async function seed(source: string, id: string, status: string, options: { ageSeconds?: number; handled?: 0 | 1 } = {}) {
  const receivedAtMs = NOW - (options.ageSeconds ?? 0) * 1000;
  await recordDelivery({ source, id, eventType: "test.event", body: new Uint8Array([123, 125]), receivedAtMs });
  const handled = options.handled === undefined ? null : options.handled === 1;
  // Every state but `received` is written with a lease token (store/d1/fresh.ts): a takeover's, or a result's.
  const leaseToken = status === "received" ? null : 1;
  await exec(sql`UPDATE deliveries SET status = ${status}, handled = ${handled}, lease_token = ${leaseToken} WHERE source = ${source} AND id = ${id}`);
}

afterEach(() => {
  vi.restoreAllMocks();
});

// Each test file has its own D1 (or Postgres schema), and these tests run in order on it: the counts accumulate.
describe("GET /admin/stats", () => {
  it("answers zero counts and no oldest waiting delivery for an empty inbox", async () => {
    const result = await admin("/stats");
    expect(result.status).toBe(200);
    expect(result.json).toEqual({
      counts: { received: 0, processing: 0, done: 0, failed: 0, filtered: 0 },
      unhandled: 0,
      oldestWaitingSeconds: null,
      bySource: {},
    });
  });

  it("counts deliveries by status, in total and per source", async () => {
    await seed("stripe", "evt_1", "done", { handled: 1 });
    await seed("stripe", "evt_2", "done", { handled: 0 });
    await seed("stripe", "evt_3", "failed");
    await seed("github", "gh_1", "received");
    await seed("github", "gh_2", "processing");
    // A filtered delivery: stored done without `handled` (store/filtered.ts), counted apart from done.
    await recordDelivery({ source: "github", id: "gh_3", eventType: "ping", body: new Uint8Array([123, 125]), receivedAtMs: NOW, filtered: "filtered: type equals \"push\"; saw \"ping\"" });
    const { json } = await admin("/stats");
    expect(json.counts).toEqual({ received: 1, processing: 1, done: 2, failed: 1, filtered: 1 });
    expect(json.bySource).toEqual({
      stripe: { received: 0, processing: 0, done: 2, failed: 1, filtered: 0 },
      github: { received: 1, processing: 1, done: 0, failed: 0, filtered: 1 },
    });
  });

  it("counts done deliveries that no handler matched as unhandled", async () => {
    expect((await admin("/stats")).json.unhandled).toBe(1);
  });

  it("reports the age of the oldest received or processing delivery, ignoring settled ones", async () => {
    await seed("standard", "old_done", "done", { ageSeconds: 5_000, handled: 1 });
    await seed("standard", "old_failed", "failed", { ageSeconds: 4_000 });
    await seed("standard", "waiting", "processing", { ageSeconds: 600 });
    await seed("standard", "newer", "received", { ageSeconds: 300 });
    vi.spyOn(Date, "now").mockReturnValue(NOW);
    expect((await admin("/stats")).json.oldestWaitingSeconds).toBe(600);
  });

  it("counts the oldest waiting delivery's age in whole seconds from the time of the request", async () => {
    // The same deliveries as above, asked about 59.999 s later.
    vi.spyOn(Date, "now").mockReturnValue(NOW + 59_999);
    expect((await admin("/stats")).json.oldestWaitingSeconds).toBe(659);
  });
});
