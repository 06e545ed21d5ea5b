import { runDurableObjectAlarm } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { PermanentError } from "../../src/handler-api";
import { defineHandlers, type Handler } from "../../src/handler-api";
import { sql } from "../../src/sql";
import { faultyQueue, rebindObject } from "../helpers/faults";
import { consume, createEffectTables, expireLease, gate, leaseFor, recordingQueue, storeDelivery } from "../helpers/processing";
import { count, deliveryRow, exec, UNIQUE_VIOLATION } from "../helpers/store-db";
import { unreachableStore } from "../helpers/store-faults";

beforeAll(createEffectTables);

/** A handler whose every run leaves an unkeyed row (counting runs) and whose effect is keyed. */
const countingHandler: Handler = (_event, ctx) => {
  ctx.effect(ctx.sql`INSERT INTO keyed_effects (delivery_id, note) VALUES (${ctx.deliveryId}, 'ok')`);
  return [ctx.sql`INSERT INTO unkeyed_effects (delivery_id, note) VALUES (${ctx.deliveryId}, 'run')`];
};

describe("the consumer", () => {
  it("processes a delivery: done, effects committed with the done mark, lease settled", async () => {
    const ref = { source: "orders", id: "d-basic" };
    await storeDelivery(ref, { n: 1 });
    const { outcomes, result } = await consume([ref], defineHandlers({ orders: { "*": countingHandler } }));
    expect(outcomes.map((outcome) => outcome.reason)).toEqual(["done"]);
    expect(result.explicitAcks).toHaveLength(1);
    const row = await deliveryRow(ref.source, ref.id);
    expect(row).toMatchObject({ status: "done", attempts: 1, handled: 1, error: null });
    expect(await count(sql`SELECT COUNT(*) AS n FROM keyed_effects WHERE delivery_id = ${ref.id}`)).toBe(1);
    // Settled: the lease's alarm is left to fire (a write saved); it finds the lease settled,
    // requeues nothing and leaves nothing behind.
    const queue = faultyQueue(null);
    await rebindObject(leaseFor(env, ref), { DELIVERIES: queue.queue });
    expect(await runDurableObjectAlarm(leaseFor(env, ref))).toBe(true);
    expect(queue.sent).toEqual([]);
    expect(await runDurableObjectAlarm(leaseFor(env, ref))).toBe(false);
  });

  it("runs the handler once for 20 copies of the same message processed at the same time", async () => {
    const ref = { source: "orders", id: "d-twenty" };
    await storeDelivery(ref);
    const handlers = defineHandlers({ orders: { "*": countingHandler } });
    const runs = await Promise.all(Array.from({ length: 20 }, () => consume([ref], handlers)));
    const reasons = runs.flatMap((run) => run.outcomes.map((outcome) => outcome.reason));
    expect(reasons.filter((reason) => reason === "done")).toHaveLength(1);
    expect(runs.every((run) => run.result.explicitAcks.length === 1)).toBe(true);
    expect(await count(sql`SELECT COUNT(*) AS n FROM unkeyed_effects WHERE delivery_id = ${ref.id}`)).toBe(1);
  });

  it("handles each of 60 deliveries exactly once with 4 concurrent consumers given all of them", async () => {
    const refs = Array.from({ length: 60 }, (_, index) => ({ source: "fleet", id: `fleet-${index}` }));
    for (const ref of refs) await storeDelivery(ref);
    const handlers = defineHandlers({ fleet: { "*": countingHandler } });
    const consumers = await Promise.all(
      Array.from({ length: 4 }, (_, consumer) => consume(consumer % 2 ? [...refs].reverse() : refs, handlers)),
    );
    const done = consumers.flatMap((run) => run.outcomes).filter((outcome) => outcome.reason === "done");
    expect(done).toHaveLength(60);
    expect(await count(sql`SELECT COUNT(*) AS n FROM unkeyed_effects WHERE delivery_id LIKE 'fleet-%'`)).toBe(60);
    expect(await count(sql`SELECT COUNT(DISTINCT delivery_id) AS n FROM unkeyed_effects WHERE delivery_id LIKE 'fleet-%'`)).toBe(60);
    expect(await count(sql`SELECT COUNT(*) AS n FROM deliveries WHERE source = 'fleet' AND status = 'done'`)).toBe(60);
  });

  it("does not run the handler again for a duplicate message of a done delivery", async () => {
    const ref = { source: "orders", id: "d-dup" };
    await storeDelivery(ref);
    const handlers = defineHandlers({ orders: { "*": countingHandler } });
    await consume([ref], handlers);
    const again = await consume([ref], handlers);
    expect(again.outcomes[0]!.reason).toBe("settled");
    expect(again.result.explicitAcks).toHaveLength(1);
    expect(await count(sql`SELECT COUNT(*) AS n FROM unkeyed_effects WHERE delivery_id = ${ref.id}`)).toBe(1);
  });

  it("finds a done delivery done even after its lease object forgot it (the stored row is the judge)", async () => {
    const ref = { source: "orders", id: "d-forgotten" };
    await storeDelivery(ref);
    const handlers = defineHandlers({ orders: { "*": countingHandler } });
    await consume([ref], handlers);
    await leaseFor(env, ref).reset(); // as if the object had been evicted with nothing stored
    const again = await consume([ref], handlers);
    expect(again.outcomes[0]!.reason).toBe("settled");
    expect(await count(sql`SELECT COUNT(*) AS n FROM unkeyed_effects WHERE delivery_id = ${ref.id}`)).toBe(1);
    expect((await deliveryRow(ref.source, ref.id))!.status).toBe("done");
  });

  it("marks a delivery without a matching handler done and unhandled, not failed", async () => {
    const ref = { source: "nobody-listens", id: "d-unhandled" };
    await storeDelivery(ref);
    const { outcomes } = await consume([ref], defineHandlers({ orders: { "*": countingHandler } }));
    expect(outcomes[0]!.reason).toBe("unhandled");
    expect(await deliveryRow(ref.source, ref.id)).toMatchObject({ status: "done", handled: 0, error: null });
  });

  it("gives the handler the parsed event and a context with its idempotency key (its stability: faults.test.ts)", async () => {
    const ref = { source: "orders", id: "d-context" };
    await storeDelivery(ref, { order: 7 }, "order.created");
    const seen: unknown[] = [];
    const handlers = defineHandlers({
      orders: {
        "order.created": (event, ctx) => void seen.push(event, ctx.deliveryId, ctx.source, ctx.eventType, ctx.attempt, ctx.idempotencyKey),
      },
    });
    await consume([ref], handlers);
    expect(seen.slice(0, 5)).toEqual([{ order: 7 }, "d-context", "orders", "order.created", 1]);
    expect(seen[5]).toMatch(/^whi_[0-9a-f]{64}$/);
  });

  it("fails a PermanentError at once, without retries, and dead-letters it", async () => {
    const ref = { source: "orders", id: "d-permanent" };
    await storeDelivery(ref);
    const deadLetters = recordingQueue(env.DEAD_LETTERS);
    const handlers = defineHandlers({
      orders: {
        "*": () => {
          throw new PermanentError("order has no customer");
        },
      },
    });
    const { outcomes, result } = await consume([ref], handlers, { DEAD_LETTERS: deadLetters.producer });
    expect(outcomes[0]!.reason).toBe("failed");
    expect(result.retryMessages).toEqual([]);
    expect(await deliveryRow(ref.source, ref.id)).toMatchObject({ status: "failed", attempts: 1, error: "PermanentError: order has no customer" });
    expect(deadLetters.sent).toEqual([{ ...ref, error: "PermanentError: order has no customer" }]);
  });

  it("retries a failing handler after 2, 4, 8 and 16 seconds, then fails it and dead-letters it", async () => {
    const ref = { source: "orders", id: "d-flaky" };
    await storeDelivery(ref);
    const deadLetters = recordingQueue(env.DEAD_LETTERS);
    const handlers = defineHandlers({
      orders: {
        "*": (_event, ctx) => {
          throw new Error(`downstream timeout on attempt ${ctx.attempt}`);
        },
      },
    });
    const delays: (number | undefined)[] = [];
    for (let attempt = 1; attempt <= 4; attempt++) {
      const { outcomes, result, retryDelays } = await consume([ref], handlers, { DEAD_LETTERS: deadLetters.producer });
      expect(outcomes[0]).toMatchObject({ action: "retry", reason: "handler_error" });
      expect(result.explicitAcks).toEqual([]);
      expect(result.retryMessages).toHaveLength(1);
      delays.push(...retryDelays);
      expect(await deliveryRow(ref.source, ref.id)).toMatchObject({ status: "received", attempts: attempt, error: `downstream timeout on attempt ${attempt}` });
    }
    expect(delays).toEqual([2, 4, 8, 16]);
    const last = await consume([ref], handlers, { DEAD_LETTERS: deadLetters.producer });
    expect(last.outcomes[0]!.reason).toBe("failed");
    expect(last.result.explicitAcks).toHaveLength(1);
    const row = await deliveryRow(ref.source, ref.id);
    expect(row).toMatchObject({ status: "failed", attempts: 5 });
    expect(row!.error).toBe("downstream timeout on attempt 5 (gave up after 5 attempts)");
    expect(deadLetters.sent).toHaveLength(1);
  });

  it("processes the good deliveries of a batch when one of them is broken", async () => {
    const refs = ["good-1", "broken", "good-2", "good-3"].map((id) => ({ source: "mixed", id }));
    for (const ref of refs) await storeDelivery(ref, { broken: ref.id === "broken" });
    const handlers = defineHandlers({
      mixed: {
        "*": (event: { broken: boolean }, ctx) => {
          if (event.broken) throw new PermanentError("broken payload");
          return [ctx.sql`INSERT INTO keyed_effects (delivery_id, note) VALUES (${ctx.deliveryId}, 'mixed')`];
        },
      },
    });
    const { outcomes } = await consume(refs, handlers);
    expect(outcomes.map((outcome) => outcome.reason)).toEqual(["done", "failed", "done", "done"]);
    expect(await count(sql`SELECT COUNT(*) AS n FROM keyed_effects WHERE note = 'mixed'`)).toBe(3);
  });

  it("commits the others of a batch when the database refuses one delivery's effect", async () => {
    const refs = ["ok-1", "clash", "ok-2"].map((id) => ({ source: "commit", id }));
    for (const ref of refs) await storeDelivery(ref);
    await exec(sql`INSERT INTO keyed_effects (delivery_id, note) VALUES ('taken', 'x')`);
    const handlers = defineHandlers({
      commit: {
        "*": (_event, ctx) => [
          // The "clash" delivery inserts a key that already exists: its commit must fail, alone.
          ctx.sql`INSERT INTO keyed_effects (delivery_id, note) VALUES (${ctx.deliveryId === "clash" ? "taken" : ctx.deliveryId}, 'commit')`,
        ],
      },
    });
    const { outcomes } = await consume(refs, handlers);
    expect(outcomes.map((outcome) => outcome.reason)).toEqual(["done", "handler_error", "done"]);
    expect(await count(sql`SELECT COUNT(*) AS n FROM keyed_effects WHERE note = 'commit'`)).toBe(2);
    const clash = await deliveryRow("commit", "clash");
    expect(clash).toMatchObject({ status: "received", attempts: 1 });
    // The database's own words for the violation, which differ between D1 and Postgres.
    expect(clash!.error).toMatch(UNIQUE_VIOLATION);
  });

  it("retries the message, acking nothing and counting no attempt, when the database cannot be reached; the lease is released", async () => {
    const ref = { source: "orders", id: "d-infra" };
    await storeDelivery(ref);
    const down = unreachableStore();
    const { outcomes, result, retryDelays } = await consume([ref], defineHandlers({ orders: { "*": countingHandler } }), down.bindings);
    expect(outcomes[0]).toMatchObject({ action: "retry", reason: "infrastructure" });
    expect(result.explicitAcks).toEqual([]);
    expect(result.retryMessages).toHaveLength(1);
    expect(retryDelays).toEqual([10]);
    expect(down.faulted.length).toBeGreaterThan(0);
    // Nothing was recorded: the row is as stored, and the retry can claim at once.
    expect(await deliveryRow(ref.source, ref.id)).toMatchObject({ status: "received", attempts: 0, error: null });
    expect(await leaseFor(env, ref).claim(ref)).toMatchObject({ kind: "granted", takeover: false });
  });

  it("acks and drops a malformed message, explicitly", async () => {
    const { outcomes, result } = await consume([{ nonsense: true } as never], defineHandlers({}));
    expect(outcomes[0]!.reason).toBe("malformed");
    expect(result.explicitAcks).toHaveLength(1);
    expect(result.retryMessages).toEqual([]);
  });
});

describe("crashes and stalls", () => {
  it("takes over from a worker that died mid-job once the alarm expires its lease: keyed effect once, unkeyed twice", async () => {
    const ref = { source: "crashy", id: "d-died" };
    await storeDelivery(ref);
    const started = gate();
    // The first worker does its external effects, then never finishes (it died).
    const dying = defineHandlers({
      crashy: {
        "*": async (_event, ctx) => {
          await exec(
            sql`INSERT INTO keyed_effects (delivery_id, note) VALUES (${ctx.deliveryId}, 'crashy') ON CONFLICT DO NOTHING`,
            sql`INSERT INTO unkeyed_effects (delivery_id, note) VALUES (${ctx.deliveryId}, 'crashy')`,
          );
          started.open();
          await new Promise(() => {});
        },
      },
    });
    void consume([ref], dying);
    await started.promise;
    // A first claim is not written to the store: the lease object alone knows who holds it.
    expect(await deliveryRow(ref.source, ref.id)).toMatchObject({ status: "received", attempts: 0 });

    // While the lease holds, another worker is turned away.
    const healthy = defineHandlers({
      crashy: {
        "*": async (_event, ctx) => {
          await exec(
            sql`INSERT INTO keyed_effects (delivery_id, note) VALUES (${ctx.deliveryId}, 'crashy') ON CONFLICT DO NOTHING`,
            sql`INSERT INTO unkeyed_effects (delivery_id, note) VALUES (${ctx.deliveryId}, 'crashy')`,
          );
        },
      },
    });
    expect((await consume([ref], healthy)).outcomes[0]!.reason).toBe("busy");

    const requeued = faultyQueue(null);
    await rebindObject(leaseFor(env, ref), { DELIVERIES: requeued.queue });
    expect(await expireLease(leaseFor(env, ref))).toBe(true);
    expect(requeued.sent).toEqual([ref]); // the alarm put the delivery back on the queue
    const takeover = await consume([ref], healthy);
    expect(takeover.outcomes[0]!.reason).toBe("done");
    // Two runs, one counted: the store never saw the vanished first run start (it could have died before
    // its handler: such a loss never uses up an attempt); the takeover's run is recorded.
    expect(await deliveryRow(ref.source, ref.id)).toMatchObject({ status: "done", attempts: 1 });
    expect(await count(sql`SELECT COUNT(*) AS n FROM keyed_effects WHERE delivery_id = ${ref.id}`)).toBe(1);
    // The lesson the inbox cannot remove: an effect not keyed by the delivery happens twice.
    expect(await count(sql`SELECT COUNT(*) AS n FROM unkeyed_effects WHERE delivery_id = ${ref.id}`)).toBe(2);
  });

  it("refuses the late finish of a stalled worker whose lease ran out; the new result stands", async () => {
    const ref = { source: "stall", id: "d-slow" };
    await storeDelivery(ref);
    const started = gate();
    const release = gate();
    const slow = defineHandlers({
      stall: {
        "*": async (_event, ctx) => {
          started.open();
          await release.promise;
          return [ctx.sql`INSERT INTO keyed_effects (delivery_id, note) VALUES (${`${ctx.deliveryId}/slow`}, 'slow')`];
        },
      },
    });
    const fast = defineHandlers({
      stall: { "*": (_event, ctx) => [ctx.sql`INSERT INTO keyed_effects (delivery_id, note) VALUES (${`${ctx.deliveryId}/fast`}, 'fast')`] },
    });
    const slowRun = consume([ref], slow);
    await started.promise;
    expect(await expireLease(leaseFor(env, ref))).toBe(true);
    expect((await consume([ref], fast)).outcomes[0]!.reason).toBe("done");

    release.open();
    const late = await slowRun;
    expect(late.outcomes[0]!.reason).toBe("lease_lost");
    expect(await count(sql`SELECT COUNT(*) AS n FROM keyed_effects WHERE delivery_id = ${`${ref.id}/slow`}`)).toBe(0);
    expect(await count(sql`SELECT COUNT(*) AS n FROM keyed_effects WHERE delivery_id = ${`${ref.id}/fast`}`)).toBe(1);
    expect(await deliveryRow(ref.source, ref.id)).toMatchObject({ status: "done", attempts: 1 }); // the stalled run was never recorded: not counted
  });

  it("sets a delivery aside after MAX_ATTEMPTS when its workers keep dying", async () => {
    const ref = { source: "crashloop", id: "d-loop" };
    await storeDelivery(ref);
    const deadLetters = recordingQueue(env.DEAD_LETTERS);
    let runs = 0;
    const crashing = defineHandlers({
      crashloop: {
        "*": async () => {
          runs++;
          await new Promise(() => {}); // dies every time
        },
      },
    });
    // Six runs: the first, a claim the store never saw start, counts nothing (it could have been lost
    // before its handler); each later one is a recorded takeover, counted when the next finds it gone.
    for (let attempt = 1; attempt <= 6; attempt++) {
      void consume([ref], crashing);
      await expect.poll(() => runs).toBe(attempt);
      expect(await expireLease(leaseFor(env, ref))).toBe(true);
    }
    const { outcomes } = await consume([ref], crashing, { DEAD_LETTERS: deadLetters.producer });
    expect(outcomes[0]!.reason).toBe("exhausted");
    expect(runs).toBe(6);
    const row = await deliveryRow(ref.source, ref.id);
    expect(row).toMatchObject({ status: "failed", attempts: 5 });
    expect(row!.error).toBe("gave up: the worker kept crashing (5 attempts without a result)");
    expect(deadLetters.sent).toHaveLength(1);
    expect(await runDurableObjectAlarm(leaseFor(env, ref))).toBe(false);
  });
});
