/**
 * A poison delivery (its handler kills the whole invocation: a CPU-bound loop, a catastrophic
 * regex, the isolate's memory used up) beside healthy ones in one queue batch: only the poison one
 * is charged for the crashes. Simulated inside the runtime: when the poison handler starts, its
 * invocation is "frozen": every handler of that invocation that has not returned yet never does,
 * as under a loop that never yields; nothing of it runs again. Each round, the leases of what is
 * left run out (the alarm, with the clock moved past the lease), and a new invocation takes the
 * requeued messages, as the queue would.
 */
import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { defineHandlers, type Handler } from "../../src/handler-api";
import type { DeliveryRef } from "../../src/processing/messages";
import { sql } from "../../src/sql";
import { faultyQueue, rebindObject } from "../helpers/faults";
import { consume, createEffectTables, expireLease, leaseFor, storeDelivery } from "../helpers/processing";
import { count, deliveryRow } from "../helpers/store-db";

beforeAll(createEffectTables);

const never = new Promise<never>(() => {});

/** One simulated invocation: frozen once its poison handler starts. */
interface Invocation {
  frozen: boolean;
  poisonStarted: boolean;
  started: number;
  finished: string[];
  blocked: number;
}

function handlersFor(invocation: Invocation) {
  const healthy: Handler = async (_event, ctx) => {
    invocation.started++;
    // Yield, as real work would: a poison handler that starts meanwhile freezes this invocation.
    await new Promise((resolve) => setTimeout(resolve, 20));
    if (invocation.frozen) {
      invocation.blocked++;
      return never;
    }
    invocation.finished.push(ctx.deliveryId);
    return [ctx.sql`INSERT INTO keyed_effects (delivery_id, note) VALUES (${ctx.deliveryId}, 'healthy')`];
  };
  const poison: Handler = async () => {
    invocation.poisonStarted = true;
    invocation.frozen = true;
    return never;
  };
  return defineHandlers({ poisoned: { "healthy.event": healthy, "poison.event": poison } });
}

const effectsOf = (id: string) => count(sql`SELECT COUNT(*) AS n FROM keyed_effects WHERE delivery_id = ${id}`);

describe("a poison delivery in a batch of healthy ones", () => {
  it("is the only one charged for its crash loop: the healthy ones end done, once each, and it ends failed after MAX_ATTEMPTS", { timeout: 120_000 }, async () => {
    const healthy: DeliveryRef[] = Array.from({ length: 7 }, (_, index) => ({ source: "poisoned", id: `healthy-${index}` }));
    const poison: DeliveryRef = { source: "poisoned", id: "poison" };
    // The poison one in the middle of the batch: the worst place, batch-mates on both sides.
    const refs = [...healthy.slice(0, 3), poison, ...healthy.slice(3)];
    for (const ref of refs) {
      await storeDelivery(ref, { id: ref.id }, ref === poison ? "poison.event" : "healthy.event");
      // The alarms requeue into a queue nobody consumes: each round below is the next invocation.
      await rebindObject(leaseFor(env, ref), { DELIVERIES: faultyQueue(null).queue });
    }

    let poisonRuns = 0;
    for (let round = 1; round <= 12; round++) {
      const pending: DeliveryRef[] = [];
      for (const ref of refs) {
        const row = await deliveryRow(ref.source, ref.id);
        if (row!.status !== "done" && row!.status !== "failed") pending.push(ref);
      }
      if (pending.length === 0) break;
      const invocation: Invocation = { frozen: false, poisonStarted: false, started: 0, finished: [], blocked: 0 };
      const run = consume(pending, handlersFor(invocation));
      // The round is over when the invocation finished, or froze with each handler it started
      // either blocked or returned, and each that returned committed.
      let ended = false;
      void run.then(() => (ended = true));
      await expect
        .poll(
          async () => {
            if (ended) return true;
            if (!invocation.poisonStarted) return false;
            if (invocation.started !== invocation.finished.length + invocation.blocked) return false;
            for (const id of invocation.finished) if ((await deliveryRow("poisoned", id))!.status !== "done") return false;
            return true;
          },
          { timeout: 10_000, interval: 20 },
        )
        .toBe(true);
      if (invocation.poisonStarted) poisonRuns++;
      // The frozen invocation's leases run out; their alarms requeue the deliveries.
      if (!ended) for (const ref of pending) await expireLease(leaseFor(env, ref));
    }

    for (const ref of healthy) {
      expect(await deliveryRow(ref.source, ref.id)).toMatchObject({ status: "done", attempts: 1 });
      expect(await effectsOf(ref.id)).toBe(1);
    }
    const row = await deliveryRow(poison.source, poison.id);
    expect(row).toMatchObject({ status: "failed", attempts: 5 });
    expect(row!.error).toBe("gave up: the worker kept crashing (5 attempts without a result)");
    // Its first run was not recorded (it counts nothing); each later one was, alone, and counted.
    expect(poisonRuns).toBe(6);
  });
});
