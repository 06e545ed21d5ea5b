/**
 * A worker that is no longer sure of its lease stops: taken over (a renewal answers that another
 * worker holds it), nothing more leaves the inbox for the delivery; unable to renew (the lease
 * object browned out for most of a lease), it stops before the lease runs out, and the takeover
 * that follows charges the delivery nothing, because its worker never crashed.
 * LEASE_SECONDS is 3 here, so renewals come every second.
 */
import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { defineHandlers } from "../../src/handler-api";
import type { DeliveryRef } from "../../src/processing/messages";
import { sql } from "../../src/sql";
import { faultyNamespace, faultyQueue, rebindObject } from "../helpers/faults";
import { forward } from "../../src/forwarding/forward";
import { backendCalls, FORWARD_SECRET, planBackend } from "../helpers/forward-backend";
import { consume, createEffectTables, expireLease, gate, leaseFor, storeDelivery } from "../helpers/processing";
import { count, deliveryRow } from "../helpers/store-db";

beforeAll(createEffectTables);

const SHORT_LEASE = { LEASE_SECONDS: "3" } as Partial<Env>;

async function shortLease(ref: DeliveryRef): Promise<void> {
  await rebindObject(leaseFor(env, ref), { ...SHORT_LEASE, DELIVERIES: faultyQueue(null).queue });
}

describe("a worker whose lease was taken over", () => {
  it("is stopped at once: its signal aborts, its forward never leaves, its effects never commit", { timeout: 30_000 }, async () => {
    // A configured source: forwarding is set up for those only.
    const ref = { source: "standard", id: "taken-over-stops" };
    await storeDelivery(ref);
    await shortLease(ref);
    const url = await planBackend("/taken-over", { status: 200 });
    // The handler forwards after its own work, as a handler that calls an API would.
    const send = forward({ url, secret: FORWARD_SECRET, timeoutSeconds: 1 });
    const forwarding = SHORT_LEASE;
    const release = gate();
    let aborted = false;
    const stalled = defineHandlers({
      standard: {
        "*": async (event, ctx) => {
          ctx.signal.addEventListener("abort", () => (aborted = true));
          await release.promise; // ignores its signal, as a careless handler would
          await send(event, ctx);
          return [ctx.sql`INSERT INTO keyed_effects (delivery_id, note) VALUES (${ctx.deliveryId}, 'stale worker')`];
        },
      },
    });
    const first = consume([ref], stalled, forwarding);
    await expect.poll(async () => (await leaseFor(env, ref).claim(ref)).kind).toBe("busy");
    // Its lease runs out (it stalled) and another worker takes over and finishes.
    expect(await expireLease(leaseFor(env, ref), 3)).toBe(true);
    const fresh = defineHandlers({
      standard: {
        "*": async (event, ctx) => {
          await send(event, ctx);
          return [ctx.sql`INSERT INTO keyed_effects (delivery_id, note) VALUES (${ctx.deliveryId}, 'new worker')`];
        },
      },
    });
    expect((await consume([ref], fresh, forwarding)).outcomes[0]!.reason).toBe("done");
    expect((await backendCalls("/taken-over")).calls).toHaveLength(1);
    // The stalled worker's next renewal learns it lost the lease: it stops before its handler returns.
    expect((await first).outcomes[0]).toMatchObject({ action: "ack", reason: "lease_lost" });
    expect(aborted).toBe(true);
    release.open();
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect((await backendCalls("/taken-over")).calls).toHaveLength(1);
    expect(await count(sql`SELECT COUNT(*) AS n FROM keyed_effects WHERE delivery_id = ${ref.id}`)).toBe(1);
    expect(await deliveryRow(ref.source, ref.id)).toMatchObject({ status: "done", attempts: 1 });
  });
});

describe("a live worker whose lease could not be renewed", () => {
  // "hang": the lease object takes the call and never answers; without a bound the worker would
  // wait on it past the end of its lease, at work while another worker takes over.
  it.each(["throw", "hang"] as const)("stops before the lease runs out, and the takeover after it counts no run: renewals that %s are not a crash", { timeout: 30_000 }, async (fault) => {
    const ref = { source: "renewfails", id: `lapsed-${fault}` };
    await storeDelivery(ref);
    await shortLease(ref);
    // A takeover, so that the worker's run is recorded in the store before its handler runs (the
    // run a takeover could charge): a first worker claimed it and vanished.
    expect(await leaseFor(env, ref).claim(ref)).toMatchObject({ kind: "granted" });
    expect(await expireLease(leaseFor(env, ref), 3)).toBe(true);

    const renewals = faultyNamespace(env.DELIVERY_LEASE, (call) => (call.method === "renew" ? fault : undefined));
    let aborted: unknown = null;
    let runs = 0;
    const handlers = defineHandlers({
      renewfails: {
        "*": async (_event, ctx) => {
          runs++;
          if (runs > 1) return [ctx.sql`INSERT INTO keyed_effects (delivery_id, note) VALUES (${ctx.deliveryId}, 'ok')`];
          // Slow, but alive: it would finish if its lease held.
          await new Promise((resolve) => ctx.signal.addEventListener("abort", resolve));
          aborted = ctx.signal.reason;
        },
      },
    });
    const { outcomes } = await consume([ref], handlers, { DELIVERY_LEASE: renewals.namespace, ...SHORT_LEASE });
    expect(renewals.faulted.length).toBeGreaterThan(0);
    expect(outcomes[0]).toMatchObject({ action: "retry", reason: "infrastructure" });
    expect(aborted).toBeInstanceOf(Error);
    expect((aborted as Error).name).toBe("LeaseLapsedError");
    const stopped = await deliveryRow(ref.source, ref.id);
    expect(stopped).toMatchObject({ status: "received", attempts: 0 });

    // Whatever its lease object does next (its safety alarm, a takeover), the run is not charged.
    await expireLease(leaseFor(env, ref), 3);
    expect((await consume([ref], handlers, SHORT_LEASE)).outcomes[0]!.reason).toBe("done");
    expect(await deliveryRow(ref.source, ref.id)).toMatchObject({ status: "done", attempts: 1 });
    renewals.release();
  });
});
