/**
 * The consumer under injected faults: slow and hung handlers, database and lease-object brownouts,
 * commits and marks that land and then report an error, a crash between a handler's external call
 * and its commit. Each drives the real consumer, lease objects and store, D1 or Postgres
 * (test/helpers/faults.ts, test/helpers/store-faults.ts). D1's shared commits: test/store/d1/faults.test.ts.
 */
import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it, vi } from "vitest";
import { createMessageBatch } from "cloudflare:test";
import { BATCH_BUDGET_MS, BATCH_CONCURRENCY, consumeDeliveries } from "../../src/processing/consumer";
import type { DeliveryRef } from "../../src/processing/messages";
import { defineHandlers, type Handler } from "../../src/handler-api";
import { registryResolver } from "../../src/handler-api/registry";
import { sql } from "../../src/sql";
import { faultyNamespace, faultyQueue, rebindObject } from "../helpers/faults";
import { consume, createEffectTables, expireLease, gate, leaseFor, storeDelivery } from "../helpers/processing";
import { count, deliveryRow, exec, storeName } from "../helpers/store-db";
import { faultyStore, pgError, unreachableStore } from "../helpers/store-faults";

beforeAll(async () => {
  await createEffectTables();
  // A stand-in for a downstream API that deduplicates on the idempotency key (Stripe's Idempotency-Key).
  await exec(sql`CREATE TABLE IF NOT EXISTS downstream_calls (idempotency_key TEXT PRIMARY KEY, delivery_id TEXT, calls INTEGER)`);
});

/** Counts every run (unkeyed) and commits one keyed effect with the done mark. */
const counting: Handler = (_event, ctx) => {
  ctx.effect(ctx.sql`INSERT INTO keyed_effects (delivery_id, note) VALUES (${ctx.deliveryId}, 'ok')`);
  return [ctx.sql`INSERT INTO unkeyed_effects (delivery_id, note) VALUES (${ctx.deliveryId}, 'run')`];
};

const runsOf = (id: string) => count(sql`SELECT COUNT(*) AS n FROM unkeyed_effects WHERE delivery_id = ${id}`);
const keyedOf = (id: string) => count(sql`SELECT COUNT(*) AS n FROM keyed_effects WHERE delivery_id = ${id}`);

/**
 * What a lease object stored: its alarm (on the hot path the lease's end, and all it writes) and
 * the key that only its rare paths write (src/processing/lease/stored.ts).
 */
async function leaseState(ref: { source: string; id: string }) {
  return runInDurableObject(leaseFor(env, ref), async (_instance, ctx) => ({
    state: await ctx.storage.get<{ token: number; state: "held" | "released" | "abandoned" }>("lease"),
    alarm: await ctx.storage.getAlarm(),
  }));
}

describe("a slow handler", () => {
  it("holds up neither the leases nor the results of the fast deliveries in its batch", async () => {
    const slow = { source: "slowbatch", id: "slow" };
    const fast = Array.from({ length: 12 }, (_, index) => ({ source: "slowbatch", id: `fast-${index}` }));
    for (const ref of [slow, ...fast]) await storeDelivery(ref);
    const started = gate();
    const release = gate();
    const handlers = defineHandlers({
      slowbatch: {
        "*": async (event, ctx) => {
          if (ctx.deliveryId === "slow") {
            started.open();
            await release.promise;
          }
          return counting(event, ctx) as never;
        },
      },
    });
    const run = consume([slow, ...fast], handlers);
    await started.promise;
    // The fast ones are done (committed, leases settled) while the slow one still runs.
    await expect.poll(() => count(sql`SELECT COUNT(*) AS n FROM deliveries WHERE source = 'slowbatch' AND status = 'done'`), { timeout: 5_000 }).toBe(12);
    expect((await deliveryRow(slow.source, slow.id))!.status).toBe("received"); // held by its lease, not yet recorded
    for (const ref of fast) expect((await leaseState(ref)).state).toBeUndefined();
    release.open();
    const { outcomes, result } = await run;
    expect(outcomes.every((outcome) => outcome.reason === "done")).toBe(true);
    expect(result.explicitAcks).toHaveLength(13);
    for (const ref of [slow, ...fast]) expect(await runsOf(ref.id)).toBe(1);
  });

  it("keeps its lease by renewing it past LEASE_SECONDS: a concurrent consumer meets it busy, and it runs once", async () => {
    const ref = { source: "slowlease", id: "renewed" };
    await storeDelivery(ref);
    // A 3 s lease for this object and this consumer: renewals every second.
    await rebindObject(leaseFor(env, ref), { LEASE_SECONDS: "3" });
    const started = gate();
    const release = gate();
    const handlers = defineHandlers({
      slowlease: {
        "*": async (event, ctx) => {
          started.open();
          await release.promise;
          return counting(event, ctx) as never;
        },
      },
    });
    const first = consume([ref], handlers, { LEASE_SECONDS: "3" });
    await started.promise;
    const claimedUntil = (await leaseState(ref)).alarm!;
    // Wait past the end of the lease as first granted; renewals must have moved it on.
    await expect.poll(async () => (await leaseState(ref)).alarm! > claimedUntil + 2_000, { timeout: 8_000, interval: 250 }).toBe(true);
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, claimedUntil + 500 - Date.now())));
    // The alarm of the first lease fires now: the lease is alive, so it neither abandons nor requeues it.
    expect(await expireLease(leaseFor(env, ref), 0)).toBe(true);
    expect((await leaseState(ref)).state).toBeUndefined(); // an abandoned lease would be stored as such
    // Another consumer invocation (production runs several at once) gets the same delivery: busy.
    const second = await consume([ref], handlers, { LEASE_SECONDS: "3" });
    expect(second.outcomes[0]!.reason).toBe("busy");
    release.open();
    expect((await first).outcomes[0]!.reason).toBe("done");
    expect(await runsOf(ref.id)).toBe(1);
    expect(await deliveryRow(ref.source, ref.id)).toMatchObject({ status: "done", attempts: 1 });
  });

  it("is given up on after HANDLER_TIMEOUT_SECONDS as a retryable failure: its signal aborts, its lease is released", async () => {
    const ref = { source: "hung", id: "never-returns" };
    await storeDelivery(ref);
    const signals: AbortSignal[] = [];
    const handlers = defineHandlers({
      hung: {
        "*": (_event, ctx) => {
          signals.push(ctx.signal);
          return new Promise<never>(() => {});
        },
      },
    });
    const { outcomes, retryDelays } = await consume([ref], handlers, { HANDLER_TIMEOUT_SECONDS: "1" });
    expect(outcomes[0]).toMatchObject({ action: "retry", reason: "handler_error" });
    expect(retryDelays).toEqual([2]);
    const row = await deliveryRow(ref.source, ref.id);
    expect(row).toMatchObject({ status: "received", attempts: 1 });
    expect(row!.error).toBe("HandlerTimeoutError: the handler did not return within 1 s");
    expect(signals).toHaveLength(1);
    expect(signals[0]!.aborted).toBe(true);
    expect(await leaseFor(env, ref).claim(ref)).toMatchObject({ kind: "granted", takeover: false });
  });
});

describe("the batch's time budget", () => {
  it("starts no delivery once less than a handler's time is left: the rest are retried unclaimed, nothing counted", async () => {
    const refs = Array.from({ length: 10 }, (_, index) => ({ source: "budget", id: `b-${index}` }));
    for (const ref of refs) await storeDelivery(ref);
    const realNow = Date.now.bind(Date);
    let clock: { mockRestore(): void } | undefined;
    const handlers = defineHandlers({
      budget: {
        "*": async (event, ctx) => {
          // The first handler to finish takes 14 minutes, as far as the batch can tell.
          if (!clock) clock = vi.spyOn(Date, "now").mockImplementation(() => realNow() + BATCH_BUDGET_MS);
          return counting(event, ctx) as never;
        },
      },
    });
    let outcomes;
    try {
      ({ outcomes } = await consume(refs, handlers));
    } finally {
      clock?.mockRestore();
    }
    // BATCH_CONCURRENCY (8) had started; the 9th and 10th came after the clock moved.
    expect(outcomes.slice(0, BATCH_CONCURRENCY).every((outcome) => outcome.reason === "done")).toBe(true);
    expect(outcomes.slice(BATCH_CONCURRENCY)).toEqual([
      { action: "retry", reason: "deferred", delaySeconds: 0 },
      { action: "retry", reason: "deferred", delaySeconds: 0 },
    ]);
    for (const ref of refs.slice(BATCH_CONCURRENCY)) {
      expect(await deliveryRow(ref.source, ref.id)).toMatchObject({ status: "received", attempts: 0 });
      expect(await leaseFor(env, ref).claim(ref)).toMatchObject({ kind: "granted", takeover: false });
    }
  });

  it("cuts a running handler short when it runs out, without using up its attempt: back to received, retried, its lease released", async () => {
    const ref = { source: "budget", id: "cut-short" };
    await storeDelivery(ref);
    await exec(sql`UPDATE deliveries SET attempts = 4 WHERE id = ${ref.id}`); // its last attempt
    const batch = createMessageBatch<DeliveryRef>("webhook-deliveries", [{ id: "cut-short", timestamp: new Date(), attempts: 1, body: ref }]);
    const handlers = defineHandlers({ budget: { "*": () => new Promise<never>(() => {}) } });
    const realNow = Date.now.bind(Date);
    let calls = 0;
    // The batch starts now; from then on only 3 s of its 14 minutes are left.
    const clock = vi.spyOn(Date, "now").mockImplementation(() => (calls++ === 0 ? realNow() : realNow() + BATCH_BUDGET_MS - 3_000));
    let outcomes;
    try {
      outcomes = await consumeDeliveries(batch, { ...env, HANDLER_TIMEOUT_SECONDS: "2" } as Env, registryResolver(handlers));
    } finally {
      clock.mockRestore();
    }
    expect(outcomes).toEqual([{ action: "retry", reason: "deferred", delaySeconds: 0 }]);
    expect(await deliveryRow(ref.source, ref.id)).toMatchObject({ status: "received", attempts: 4 });
    expect(await leaseFor(env, ref).claim(ref)).toMatchObject({ kind: "granted", takeover: false });
  });
});

describe("infrastructure failures", () => {
  it("fail no delivery through a long database brownout (alarms and retries included); after it, done once with one attempt", async () => {
    const ref = { source: "brownout", id: "store-down" };
    await storeDelivery(ref);
    const down = unreachableStore();
    const handlers = defineHandlers({ brownout: { "*": counting } });
    const delays: (number | undefined)[] = [];
    // Far more rounds than MAX_ATTEMPTS (5): each a queue retry, each followed by the lease alarm
    // firing as it would while the outage lasts.
    for (let round = 1; round <= 12; round++) {
      const { outcomes, retryDelays } = await consume([ref], handlers, down.bindings, { attempts: round });
      expect(outcomes[0]).toMatchObject({ action: "retry", reason: "infrastructure" });
      delays.push(...retryDelays);
      await expireLease(leaseFor(env, ref));
    }
    expect(delays).toEqual([10, 20, 40, 80, 160, 300, 300, 300, 300, 300, 300, 300]);
    expect(await deliveryRow(ref.source, ref.id)).toMatchObject({ status: "received", attempts: 0 });
    const recovered = await consume([ref], handlers, {}, { attempts: 13 });
    expect(recovered.outcomes[0]!.reason).toBe("done");
    expect(await deliveryRow(ref.source, ref.id)).toMatchObject({ status: "done", attempts: 1 });
    expect(await runsOf(ref.id)).toBe(1);
  });

  it("fail no delivery when the database fails after the handler ran, on its last attempt: the run that met the error is not counted", async () => {
    const ref = { source: "brownout", id: "commit-fails-last" };
    await storeDelivery(ref);
    await exec(sql`UPDATE deliveries SET attempts = 4, error = 'earlier failure' WHERE id = ${ref.id}`);
    // The database answers the claim, then fails everything: the commit and the retry bookkeeping.
    const flaky = faultyStore((call) => (call.n > 1 ? "throw" : undefined));
    const handlers = defineHandlers({ brownout: { "*": counting } });
    const failed = await consume([ref], handlers, flaky.bindings);
    expect(failed.outcomes[0]).toMatchObject({ action: "retry", reason: "infrastructure" });
    const again = await consume([ref], handlers);
    expect(again.outcomes[0]!.reason).toBe("done");
    expect(await deliveryRow(ref.source, ref.id)).toMatchObject({ status: "done", attempts: 5 });
    expect(await keyedOf(ref.id)).toBe(1);
  });

  it("dead-letter a crash loop whose gave-up mark landed but the database reported an error", async () => {
    const ref = { source: "lostack", id: "gave-up-landed" };
    await storeDelivery(ref);
    // A recorded takeover (token `held.token`) on the 5th run, whose worker vanished too.
    const held = await leaseFor(env, ref).claim(ref);
    if (held.kind !== "granted") throw new Error("expected a grant");
    await exec(sql`UPDATE deliveries SET status = 'processing', attempts = 4, lease_token = ${held.token} WHERE id = ${ref.id}`);
    await rebindObject(leaseFor(env, ref), { DELIVERIES: faultyQueue(null).queue });
    expect(await expireLease(leaseFor(env, ref))).toBe(true);
    let lost = 0;
    const lostAck = faultyStore((call) => (call.sql.some((text) => text.includes("SET status = CASE")) && lost++ === 0 ? "commit-then-throw" : undefined));
    const deadLetters = faultyQueue(null);
    const { outcomes } = await consume([ref], defineHandlers({ lostack: { "*": counting } }), { ...lostAck.bindings, DEAD_LETTERS: deadLetters.queue });
    expect(lostAck.faulted).toHaveLength(1);
    // The statement ran again and found the row as its first run left it: failed, not gone.
    expect(outcomes[0]!.reason).toBe("exhausted");
    expect(deadLetters.sent).toEqual([expect.objectContaining({ ...ref, error: expect.stringContaining("gave up") })]);
    expect(await deliveryRow(ref.source, ref.id)).toMatchObject({ status: "failed", attempts: 5 });
    expect(await runsOf(ref.id)).toBe(0);
  });

  it("fail no delivery whose claim reply was lost on its last attempt: the takeover after it counts no run that never started", async () => {
    const ref = { source: "lostclaim", id: "last-attempt" };
    await storeDelivery(ref);
    await exec(sql`UPDATE deliveries SET attempts = 4, error = 'earlier failure' WHERE id = ${ref.id}`);
    // The lease object grants the claim, and its answer is lost: the consumer retries, and the
    // lease it was granted is orphaned until its alarm.
    const lostReply = faultyNamespace(env.DELIVERY_LEASE, (call) => (call.method === "claim" ? "commit-then-throw" : undefined));
    const handlers = defineHandlers({ lostclaim: { "*": counting } });
    expect((await consume([ref], handlers, { DELIVERY_LEASE: lostReply.namespace })).outcomes[0]).toMatchObject({ action: "retry", reason: "infrastructure" });
    expect(lostReply.faulted).toHaveLength(1);
    expect((await consume([ref], handlers)).outcomes[0]!.reason).toBe("busy");
    await rebindObject(leaseFor(env, ref), { DELIVERIES: faultyQueue(null).queue });
    expect(await expireLease(leaseFor(env, ref))).toBe(true);
    // The takeover: the orphaned claim never reached the store, so it is no vanished run; the last attempt runs.
    expect((await consume([ref], handlers)).outcomes[0]!.reason).toBe("done");
    expect(await deliveryRow(ref.source, ref.id)).toMatchObject({ status: "done", attempts: 5 });
    expect(await runsOf(ref.id)).toBe(1);
  });

  it("fail no delivery when the lease object browns out: nothing recorded, the retry carries it through", async () => {
    const ref = { source: "leasedown", id: "claim-fails" };
    await storeDelivery(ref);
    const down = faultyNamespace(env.DELIVERY_LEASE, () => "throw");
    const handlers = defineHandlers({ leasedown: { "*": counting } });
    for (let round = 1; round <= 8; round++) {
      const { outcomes } = await consume([ref], handlers, { DELIVERY_LEASE: down.namespace }, { attempts: round });
      expect(outcomes[0]).toMatchObject({ action: "retry", reason: "infrastructure" });
    }
    expect(await deliveryRow(ref.source, ref.id)).toMatchObject({ status: "received", attempts: 0 });
    expect((await consume([ref], handlers)).outcomes[0]!.reason).toBe("done");
    expect(await runsOf(ref.id)).toBe(1);
  });

  it("keep a delivery done when its lease cannot be settled; the lease's alarm clears it later", async () => {
    const ref = { source: "leasedown", id: "settle-fails" };
    await storeDelivery(ref);
    const noSettle = faultyNamespace(env.DELIVERY_LEASE, (call) => (call.method === "settle" ? "throw" : undefined));
    const handlers = defineHandlers({ leasedown: { "*": counting } });
    const { outcomes, result } = await consume([ref], handlers, { DELIVERY_LEASE: noSettle.namespace });
    expect(outcomes[0]!.reason).toBe("done");
    expect(result.explicitAcks).toHaveLength(1);
    expect(noSettle.faulted.map(({ call }) => call.method)).toEqual(["settle"]);
    // The lease is still held; when it runs out the delivery is requeued, and found done.
    expect(await expireLease(leaseFor(env, ref))).toBe(true);
    expect((await consume([ref], handlers)).outcomes[0]!.reason).toBe("settled");
    expect((await leaseState(ref)).state).toBeUndefined();
    expect(await runsOf(ref.id)).toBe(1);
  });

  it("keep the lease while the database is slow to answer the claim: renewed from the claim, not only while the handler runs", async () => {
    const ref = { source: "slowdb", id: "slow-mark" };
    await storeDelivery(ref);
    await rebindObject(leaseFor(env, ref), { LEASE_SECONDS: "3" });
    const slowMark = faultyStore((call) => (call.sql.some((text) => text.includes("SELECT status, attempts")) ? "hang" : undefined));
    const run = consume([ref], defineHandlers({ slowdb: { "*": counting } }), { ...slowMark.bindings, LEASE_SECONDS: "3" });
    await expect.poll(() => slowMark.faulted.length).toBe(1);
    const claimedUntil = (await leaseState(ref)).alarm!;
    await expect.poll(async () => (await leaseState(ref)).alarm! > claimedUntil + 1_500, { timeout: 8_000, interval: 250 }).toBe(true);
    slowMark.release();
    expect((await run).outcomes[0]!.reason).toBe("done");
    expect(await runsOf(ref.id)).toBe(1);
  });

  it("count a busy or locked database as infrastructure, not as the handler's error, even on the last attempt", async () => {
    const ref = { source: "busy", id: "locked-on-commit" };
    await storeDelivery(ref);
    await exec(sql`UPDATE deliveries SET attempts = 4 WHERE id = ${ref.id}`);
    // Each database's own error for it: D1's SQLITE_BUSY, Postgres's lock_not_available (55P03).
    const busy = storeName === "d1" ? new Error("D1_ERROR: database is locked: SQLITE_BUSY") : pgError("55P03", "could not obtain lock on row in relation \"deliveries\"");
    const locked = faultyStore((call) => (call.sql.some((text) => text.includes("SET status = 'done'")) ? busy : undefined));
    const handlers = defineHandlers({ busy: { "*": counting } });
    const { outcomes } = await consume([ref], handlers, locked.bindings);
    expect(outcomes[0]).toMatchObject({ action: "retry", reason: "infrastructure" });
    expect((await deliveryRow(ref.source, ref.id))!.status).not.toBe("failed");
    expect((await consume([ref], handlers)).outcomes[0]!.reason).toBe("done");
  });

  it("take a done commit that the database reported as failed for the success it was", async () => {
    const ref = { source: "lostack", id: "commit-landed" };
    await storeDelivery(ref);
    let lost = 0;
    const lostAck = faultyStore((call) => (call.sql.some((text) => text.includes("SET status = 'done'")) && lost++ === 0 ? "commit-then-throw" : undefined));
    const { outcomes } = await consume([ref], defineHandlers({ lostack: { "*": counting } }), lostAck.bindings);
    expect(lostAck.faulted).toHaveLength(1);
    expect(outcomes[0]!.reason).toBe("done");
    expect(await deliveryRow(ref.source, ref.id)).toMatchObject({ status: "done", attempts: 1 });
    expect(await keyedOf(ref.id)).toBe(1);
    expect((await leaseState(ref)).state).toBeUndefined();
  });

  it("count one attempt when a takeover's mark landed but the database reported an error", async () => {
    // Two deliveries, so that in D1 both the lone and the shared path of the marks are taken (its
    // marks go in batches, store/d1/batcher.ts); the first mark lands and reports an error. Each is a
    // takeover: a first worker claimed it and vanished without a result, and its lease ran out.
    const ref = { source: "lostack", id: "mark-landed" };
    const other = { source: "lostack", id: "mark-landed-other" };
    for (const delivery of [ref, other]) {
      await storeDelivery(delivery);
      expect(await leaseFor(env, delivery).claim(delivery)).toMatchObject({ kind: "granted" });
      await rebindObject(leaseFor(env, delivery), { DELIVERIES: faultyQueue(null).queue });
      expect(await expireLease(leaseFor(env, delivery))).toBe(true);
    }
    let lost = 0;
    const lostAck = faultyStore((call) => (call.sql.some((text) => text.includes("SET status = CASE")) && lost++ === 0 ? "commit-then-throw" : undefined));
    const { outcomes } = await consume([ref, other], defineHandlers({ lostack: { "*": counting } }), lostAck.bindings);
    expect(lostAck.faulted.length).toBeGreaterThan(0);
    expect(outcomes.map((outcome) => outcome.reason)).toEqual(["done", "done"]);
    // The mark that landed and ran again counted nothing (the vanished run was never recorded),
    // and the run that finished counted once.
    expect(await deliveryRow(ref.source, ref.id)).toMatchObject({ status: "done", attempts: 1 });
    expect(await deliveryRow(other.source, other.id)).toMatchObject({ status: "done", attempts: 1 });
  });
});

describe("a crash between a handler's external call and its commit", () => {
  it("leaves the downstream effect keyed by ctx.idempotencyKey once, and the delivery done once", async () => {
    const ref = { source: "crashcommit", id: "external-then-crash" };
    await storeDelivery(ref);
    const keys: string[] = [];
    const handlers = defineHandlers({
      crashcommit: {
        "*": async (event, ctx) => {
          keys.push(ctx.idempotencyKey);
          // The external call: the downstream API deduplicates on the key.
          await exec(
            sql`INSERT INTO downstream_calls (idempotency_key, delivery_id, calls) VALUES (${ctx.idempotencyKey}, ${ctx.deliveryId}, 1) ON CONFLICT (idempotency_key) DO NOTHING`,
          );
          return counting(event, ctx) as never;
        },
      },
    });
    // The first worker's commit never arrives (it died after the external call).
    const stalled = faultyStore((call) => (call.sql.some((text) => text.includes("SET status = 'done'")) ? "hang" : undefined));
    const first = consume([ref], handlers, stalled.bindings);
    await expect.poll(() => keys.length).toBe(1);
    await expect.poll(() => stalled.faulted.length).toBe(1);
    expect(await expireLease(leaseFor(env, ref))).toBe(true);
    const takeover = await consume([ref], handlers);
    expect(takeover.outcomes[0]!.reason).toBe("done");
    // The dead worker's commit arrives late: the fence refuses it.
    stalled.release();
    expect((await first).outcomes[0]!.reason).toBe("lease_lost");
    expect(keys).toHaveLength(2);
    expect(keys[1]).toBe(keys[0]);
    expect(await count(sql`SELECT COUNT(*) AS n FROM downstream_calls WHERE delivery_id = ${ref.id}`)).toBe(1);
    expect(await keyedOf(ref.id)).toBe(1);
    expect(await runsOf(ref.id)).toBe(1); // only the committed run's effects exist
    expect(await deliveryRow(ref.source, ref.id)).toMatchObject({ status: "done", attempts: 1 }); // the crashed run was never recorded: not counted
  });
});

describe("the idempotency key", () => {
  it("is the same across a retry and a replay of a delivery, and differs between deliveries", async () => {
    const one = { source: "idem", id: "one" };
    const two = { source: "idem", id: "two" };
    await storeDelivery(one);
    await storeDelivery(two);
    const seen: Record<string, string[]> = { one: [], two: [] };
    let failOnce = true;
    const handlers = defineHandlers({
      idem: {
        "*": (_event, ctx) => {
          seen[ctx.deliveryId]!.push(ctx.idempotencyKey);
          if (ctx.deliveryId === "one" && failOnce) {
            failOnce = false;
            throw new Error("transient");
          }
        },
      },
    });
    await consume([one, two], handlers); // one fails once
    await consume([one], handlers); // its retry
    const replayed = await exportsFetch(`/admin/deliveries/idem/one/replay?force=true`);
    expect(replayed).toBe(202);
    await consume([one], handlers); // the replay
    expect(seen.one).toHaveLength(3);
    expect(new Set(seen.one).size).toBe(1);
    expect(seen.two).toHaveLength(1);
    expect(seen.two![0]).not.toBe(seen.one![0]);
  });
});

async function exportsFetch(path: string): Promise<number> {
  const { exports } = await import("cloudflare:workers");
  const response = await (exports as unknown as { default: { fetch(request: Request): Promise<Response> } }).default.fetch(
    new Request(`https://inbox.test${path}`, { method: "POST", headers: { authorization: `Bearer ${env.ADMIN_TOKEN}` } }),
  );
  await response.arrayBuffer();
  return response.status;
}
