/**
 * A replay whose lease reset fails. The replayer resets the D1 row, then the lease object, then
 * enqueues; a failed reset is only logged, so the lease object keeps whatever the delivery's
 * previous life left in it. Whatever that is, it must not undo the replay: the replayed delivery
 * ends done, its effect once.
 */
import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config";
import { defineHandlers } from "../../src/processing/handlers";
import type { DeliveryRef } from "../../src/processing/messages";
import { deliveryRow } from "../helpers/db";
import { faultyNamespace, faultyQueue, rebindObject } from "../helpers/faults";
import { consume, countRows, createEffectTables, expireLease, leaseFor, storeDelivery } from "../helpers/processing";
import { adminWithEnv } from "./client";

/** Every lease call goes to the real object, except `reset`, which throws. */
function leasesThatCannotReset() {
  return faultyNamespace(env.DELIVERY_LEASE, (call) => (call.method === "reset" ? "throw" : undefined));
}

/** One committed row per successful run: a second run that committed would show as a second row. */
const recordingEffect = defineHandlers({
  "replay-faults": {
    "*": (_event, ctx) => [ctx.env.DB.prepare("INSERT INTO unkeyed_effects (delivery_id, note) VALUES (?1, 'ran')").bind(ctx.deliveryId)],
  },
});

beforeAll(createEffectTables);

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
    await env.DB.prepare("UPDATE deliveries SET status = 'failed', error = 'dead-lettered by the queue' WHERE source = ?1 AND id = ?2")
      .bind(ref.source, ref.id)
      .run();

    const leases = leasesThatCannotReset();
    const enqueued = faultyQueue(null);
    const replay = await adminWithEnv(`/deliveries/${ref.source}/${ref.id}/replay`, { DELIVERY_LEASE: leases.namespace, DELIVERIES: enqueued.queue }, { method: "POST" });
    expect(replay.status).toBe(202);
    expect(leases.faulted.map(({ call }) => call.method)).toEqual(["reset"]);
    expect(enqueued.sent).toEqual([ref]);

    const { outcomes } = await consume([ref], recordingEffect, { DELIVERY_LEASE: leases.namespace });
    expect(outcomes.map((outcome) => outcome.reason)).toEqual(["done"]);
    expect(await deliveryRow(ref.source, ref.id)).toMatchObject({ status: "done", attempts: 1, error: null, handled: 1 });
    expect(await countRows("SELECT COUNT(*) AS n FROM unkeyed_effects WHERE delivery_id = ?", ref.id)).toBe(1);
  });
});
