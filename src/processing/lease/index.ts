/**
 * A delivery's lease: the `DeliveryLease` Durable Object (object.ts), the rules it applies
 * (decisions.ts) and what it stores (stored.ts), and how a worker reaches a delivery's object.
 */
import { leaseName, type RunRef } from "../messages";
import type { DeliveryLease } from "./object";

export { DeliveryLease, REQUEUE_JITTER_SECONDS } from "./object";
export type { LeaseClaim } from "./state";

/** The lease object of one delivery (or one subscriber's run of it), reached by its name (`leaseName`), which the object reads back. */
export function leaseFor(env: Env, ref: RunRef): DurableObjectStub<DeliveryLease> {
  return env.DELIVERY_LEASE.get(env.DELIVERY_LEASE.idFromName(leaseName(ref)));
}
