/**
 * Duplicates leave a trace (migrations/0009, migrations-postgres/0003), on either store: the
 * original counts the copies answered "duplicate" and when the last came, by id or by content
 * digest; the source's counter grows, and the overview shows it at once; the lease fence and the
 * status of the original are untouched. D1's rows-written cost: write-cost.test.ts.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { openStore } from "../../src/store";
import { deliveryRow } from "../helpers/store-db";

const body = new TextEncoder().encode('{"type":"x"}');
const ctx = { waitUntil: () => {} };
const store = () => openStore(env);
const NOW = Date.parse("2026-12-04T10:00:00.000Z");

describe("duplicates", () => {
  it("are counted on the original, with when the last came; a new delivery counts none", async () => {
    const delivery = { source: "dup-count", id: "evt_1", eventType: "x", body, receivedAtMs: NOW };
    expect(await store().record(delivery, ctx)).toBe("stored");
    expect(await store().get(delivery)).toMatchObject({ duplicates: 0, lastDuplicateAt: null });
    expect(await store().record({ ...delivery, receivedAtMs: NOW + 1_000 }, ctx)).toBe("duplicate");
    expect(await store().record({ ...delivery, receivedAtMs: NOW + 5_000 }, ctx)).toBe("duplicate");
    const detail = await store().get(delivery);
    expect(detail).toMatchObject({ duplicates: 2, lastDuplicateAt: new Date(NOW + 5_000).toISOString(), status: "received" });
    // The row's own times are not the duplicate's: the sweeper reads updated_at as progress.
    expect(detail!.updatedAt).toBe(new Date(NOW).toISOString());
    const [listed] = (await store().list({ source: "dup-count", limit: 10 })).deliveries;
    expect(listed).toMatchObject({ id: "evt_1", duplicates: 2 });
  });

  it("count a signed request resent under a fresh id on the original it repeats (content digest)", async () => {
    const digest = new Uint8Array(32).fill(9);
    const original = { source: "dup-digest", id: "first", eventType: null, body, receivedAtMs: NOW, contentDigest: digest };
    expect(await store().record(original, ctx)).toBe("stored");
    expect(await store().record({ ...original, id: "fresh-id", receivedAtMs: NOW + 1 }, ctx)).toBe("duplicate");
    expect(await store().get(original)).toMatchObject({ duplicates: 1 });
    expect(await store().get({ source: "dup-digest", id: "fresh-id" })).toBeNull();
  });

  it("count after the original is done, without touching its status or its lease columns", async () => {
    const delivery = { source: "dup-done", id: "evt_done", eventType: null, body, receivedAtMs: NOW };
    await store().record(delivery, ctx);
    expect(await store().commitDone(delivery, NOW + 1, { handled: true, effects: [] }, NOW + 10)).toEqual({ kind: "committed" });
    const before = await deliveryRow("dup-done", "evt_done");
    expect(await store().record({ ...delivery, receivedAtMs: NOW + 20 }, ctx)).toBe("duplicate");
    const { duplicates, last_duplicate_at, ...after } = (await deliveryRow("dup-done", "evt_done"))!;
    const { duplicates: none, last_duplicate_at: never, ...unchanged } = before!;
    expect([none, never, duplicates, last_duplicate_at]).toEqual([0, null, 1, new Date(NOW + 20).toISOString()]);
    expect(after).toEqual(unchanged);
    expect(await store().get(delivery)).toMatchObject({ status: "done", duplicates: 1 });
  });

  it("are counted per source, and the overview shows them at once", async () => {
    const before = (await store().overview(Date.now())).duplicatesBySource["dup-source"] ?? 0;
    const delivery = { source: "dup-source", id: "a", eventType: null, body, receivedAtMs: Date.now() };
    await store().record(delivery, ctx);
    await store().record(delivery, ctx);
    await store().record({ ...delivery, id: "b" }, ctx);
    await store().record({ ...delivery, id: "b" }, ctx);
    const overview = await store().overview(Date.now());
    expect(overview.duplicatesBySource["dup-source"]).toBe(before + 2);
    expect(overview.duplicates).toBeGreaterThanOrEqual(before + 2);
  });
});
