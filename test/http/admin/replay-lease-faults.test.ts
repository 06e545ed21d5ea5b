/**
 * A replay whose lease reset fails. The replayer resets the stored row, then the lease object, then
 * enqueues; a failed reset is only logged, so the lease object keeps whatever the delivery's
 * previous life left in it. Whatever that is, it must not undo the replay: the replayed delivery
 * ends done, its effect once.
 */
import { env } from "cloudflare:workers";
import { afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { loadConfig } from "../../../src/config";
import { PermanentError } from "../../../src/handler-api";
import { defineHandlers } from "../../../src/handler-api";
import { sweep } from "../../../src/processing/sweeper";
import type { DeliveryRef } from "../../../src/processing/messages";
import { sql } from "../../../src/sql";
import { faultyNamespace, faultyQueue, rebindObject } from "../../helpers/faults";
import { consume, createEffectTables, expireLease, leaseFor, storeDelivery } from "../../helpers/processing";
import { count, deliveryRow, exec } from "../../helpers/store-db";
import { adminWithEnv } from "./client";

/** Every lease call goes to the real object, except `reset`, which throws. */
function leasesThatCannotReset() {
  return faultyNamespace(env.DELIVERY_LEASE, (call) => (call.method === "reset" ? "throw" : undefined));
}

/** One committed row per successful run: a second run that committed would show as a second row. */
const recordingEffect = defineHandlers({
  "replay-faults": {
    "*": (_event, ctx) => [ctx.sql`INSERT INTO unkeyed_effects (delivery_id, note) VALUES (${ctx.deliveryId}, 'ran')`],
  },
});

const failing = defineHandlers({ "replay-faults": { "*": () => Promise.reject(new PermanentError("no amount")) } });

beforeAll(createEffectTables);
afterEach(() => {
  vi.restoreAllMocks();
});

const reasons = (result: Awaited<ReturnType<typeof consume>>) => result.outcomes.map((outcome) => outcome.reason);

async function replayWith(leases: ReturnType<typeof leasesThatCannotReset>, ref: DeliveryRef) {
  const enqueued = faultyQueue(null);
  const replay = await adminWithEnv(`/deliveries/${ref.source}/${ref.id}/replay`, { DELIVERY_LEASE: leases.namespace, DELIVERIES: enqueued.queue }, { method: "POST" });
  expect(replay.status).toBe(202);
  expect(leases.faulted.map(({ call }) => call.method)).toEqual(["reset"]);
  expect(enqueued.sent).toEqual([ref]);
}

describe("a replay whose lease reset fails", () => {
  it("still ends done, its effect once, when the lease object kept a worn-out lease from the delivery's previous life", async () => {
    const ref: DeliveryRef = { source: "replay-faults", id: "worn-out" };
    await storeDelivery(ref, { n: 1 });
    // Its workers vanished MAX_ATTEMPTS times (each claim's lease ran out), then the queue gave up
    // on the message and the dead-letter recorder set the row failed without reaching the lease.
    const lease = leaseFor(env, ref);
    const alarms = faultyQueue(null);
    await rebindObject(lease, { DELIVERIES: alarms.queue }); // its alarms' requeues stay out of the real queue
    for (let run = 0; run < loadConfig(env).maxAttempts; run++) {
      expect((await lease.claim(ref)).kind).toBe("granted");
      expect(await expireLease(lease)).toBe(true);
    }
    await exec(sql`UPDATE deliveries SET status = 'failed', error = 'dead-lettered by the queue' WHERE source = ${ref.source} AND id = ${ref.id}`);

    const leases = leasesThatCannotReset();
    await replayWith(leases, ref);

    expect(reasons(await consume([ref], recordingEffect, { DELIVERY_LEASE: leases.namespace }))).toEqual(["done"]);
    expect(await deliveryRow(ref.source, ref.id)).toMatchObject({ status: "done", attempts: 1, error: null, handled: 1 });
    expect(await count(sql`SELECT COUNT(*) AS n FROM unkeyed_effects WHERE delivery_id = ${ref.id}`)).toBe(1);
  });

  it("waits for a lease of the previous life that is still held, then runs from attempt 1 once its alarm requeues it", async () => {
    const ref: DeliveryRef = { source: "replay-faults", id: "still-held" };
    await storeDelivery(ref, { n: 1 });
    // A worker holds the lease when the dead-letter recorder sets the row failed (and cannot reset it).
    const lease = leaseFor(env, ref);
    const alarms = faultyQueue(null);
    await rebindObject(lease, { DELIVERIES: alarms.queue });
    expect((await lease.claim(ref)).kind).toBe("granted");
    await exec(sql`UPDATE deliveries SET status = 'failed', error = 'dead-lettered by the queue' WHERE source = ${ref.source} AND id = ${ref.id}`);
    const leases = leasesThatCannotReset();
    await replayWith(leases, ref);

    expect(reasons(await consume([ref], recordingEffect, { DELIVERY_LEASE: leases.namespace }))).toEqual(["busy"]);
    expect(await expireLease(lease)).toBe(true);
    expect(alarms.sent).toEqual([ref]);
    expect(reasons(await consume([ref], recordingEffect, { DELIVERY_LEASE: leases.namespace }))).toEqual(["done"]);
    expect(await deliveryRow(ref.source, ref.id)).toMatchObject({ status: "done", attempts: 1, error: null, handled: 1 });
    expect(await count(sql`SELECT COUNT(*) AS n FROM unkeyed_effects WHERE delivery_id = ${ref.id}`)).toBe(1);
  });

  it("is only delayed, not undone, by the settled hint of a failure just before: the sweeper's requeue gets it done", async () => {
    const ref: DeliveryRef = { source: "replay-faults", id: "just-failed" };
    await storeDelivery(ref, { n: 1 });
    // Its dead letter stays out of the runtime's dead-letter consumer.
    expect(reasons(await consume([ref], failing, { DEAD_LETTERS: faultyQueue(null).queue }))).toEqual(["failed"]);
    const leases = leasesThatCannotReset();
    await replayWith(leases, ref);

    // The lease object still remembers, for one lease period, that the delivery settled: the
    // replay's message is turned away. The row keeps saying it waits, with nothing counted.
    expect(reasons(await consume([ref], recordingEffect, { DELIVERY_LEASE: leases.namespace }))).toEqual(["settled"]);
    expect(await deliveryRow(ref.source, ref.id)).toMatchObject({ status: "received", attempts: 0 });

    // Two minutes on (past the hint and SWEEP_AFTER_SECONDS), the sweeper sends it again.
    const realNow = Date.now.bind(Date);
    vi.spyOn(Date, "now").mockImplementation(() => realNow() + 2 * 60_000);
    const swept = faultyQueue(null);
    await sweep({ ...env, DELIVERIES: swept.queue }, Date.now());
    expect(swept.sent).toContainEqual(ref);
    expect(reasons(await consume([ref], recordingEffect, { DELIVERY_LEASE: leases.namespace }))).toEqual(["done"]);
    expect(await deliveryRow(ref.source, ref.id)).toMatchObject({ status: "done", attempts: 1, error: null, handled: 1 });
    expect(await count(sql`SELECT COUNT(*) AS n FROM unkeyed_effects WHERE delivery_id = ${ref.id}`)).toBe(1);
  });
});
