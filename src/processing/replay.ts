/**
 * Replay: put settled deliveries back through processing, once their cause is fixed. The admin API
 * (http/admin/replay.ts), the dashboard (http/ui/routes/replay.tsx) and the receiver (a provider's
 * redelivery of a failed delivery) all replay through here.
 *
 * The order is what makes it safe, and it is the same for one delivery and for many:
 * 1. The store first: one UPDATE moves the row to `received` with attempts 0, only from a settled state.
 *    Two admins replaying at once: one wins, the other gets a conflict. From here on the row says
 *    "not done", and the sweeper re-enqueues it even if the next steps are lost.
 * 2. Then the lease object is reset: it forgets the previous life's lease and its in-memory
 *    "settled" hint. Done before step 1, a duplicate message could re-set that hint from the old
 *    row in between.
 * 3. Then the delivery is enqueued; the next claim gets a larger fencing token than any before.
 */
import { describeError } from "../handler-api/errors";
import { openStore, type FailedFilter } from "../store";
import { enqueueDeliveries, enqueueDelivery } from "./enqueue";
import { leaseFor } from "./lease";
import { describeRun, type DeliveryRef, type RunRef } from "./messages";

export type ReplayResult =
  | { readonly kind: "replayed" }
  | { readonly kind: "not_found" }
  /** Not in a replayable state: received/processing (still in flight), or done without force. */
  | { readonly kind: "conflict"; readonly status: string }
  /** Settled, but retention cleared its body: its handler would run on no bytes. */
  | { readonly kind: "body_pruned" };

/** Lease resets in flight at once during a bulk replay: each is one Durable Object call. */
const RESET_CONCURRENCY = 16;

/**
 * Replays one delivery: a failed or filtered one (a filtered one never ran: its source's filter was
 * wrong, docs/filters.md), or with `force` also a done one. The source filter is checked at receipt
 * only, so the replay runs it as a normal delivery.
 * @example
 * const result = await replayDelivery(env, { source: "stripe", id: "evt_1" }, { force: false });
 * if (result.kind === "conflict") console.log(`it is ${result.status}`);
 */
export async function replayDelivery(env: Env, ref: RunRef, options: { force: boolean }): Promise<ReplayResult> {
  const from = options.force ? (["failed", "done", "filtered"] as const) : (["failed", "filtered"] as const);
  const store = openStore(env);
  const again = await store.resetForReplay(ref, from, Date.now());
  if (!again) {
    const state = await store.replayState(ref);
    if (state === null) return { kind: "not_found" };
    // Said for a done one even without force: forcing would not bring the body back.
    const settled = state.status === "done" || state.status === "failed" || state.status === "filtered";
    return settled && state.bodyPruned ? { kind: "body_pruned" } : { kind: "conflict", status: state.status };
  }
  await runAgain(env, again);
  return { kind: "replayed" };
}

/**
 * Replays a delivery only if it ended `failed`, in one statement when it did not (no read after):
 * for the receiver, which meets a provider's redelivery of a delivery that failed here.
 * @example
 * if (await replayIfFailed(env, { source: "stripe", id: "evt_1" })) console.log("replayed");
 */
export async function replayIfFailed(env: Env, ref: DeliveryRef): Promise<boolean> {
  const again = await openStore(env).resetForReplay(ref, ["failed"], Date.now());
  if (!again) return false;
  await runAgain(env, again);
  return true;
}

/**
 * Steps 2 and 3 for what a reset gave a new life: a delivery, or a fanned-out delivery's runs (each
 * with a lease of its own). The rows already say `received`: a lost send is the sweeper's to recover.
 */
async function runAgain(env: Env, refs: readonly RunRef[]): Promise<void> {
  for (let start = 0; start < refs.length; start += RESET_CONCURRENCY) {
    await Promise.all(refs.slice(start, start + RESET_CONCURRENCY).map((ref) => resetLease(env, ref)));
  }
  if (refs.length === 1) await enqueueDelivery(env, refs[0]!);
  else if (refs.length > 1) await enqueueDeliveries(env, refs);
}

/**
 * Replays up to `limit` failed deliveries (oldest first, those `filter` takes: a source, an event
 * type, a time range, or all) and says how
 * many failed ones are left, so a caller can loop until none remain.
 * @example
 * let result;
 * do result = await replayFailed(env, { source: "stripe", limit: 100 }); while (result.remaining > 0 && result.replayed > 0);
 */
export async function replayFailed(env: Env, options: FailedFilter & { limit: number }): Promise<{ replayed: number; remaining: number }> {
  const { limit, ...filter } = options;
  const store = openStore(env);
  const refs = await store.resetFailedForReplay(filter, limit, Date.now());
  await runAgain(env, refs);
  return { replayed: refs.length, remaining: await store.countFailed(filter) };
}

/**
 * Resets a delivery's lease object. A failure is logged, not thrown: the row is already back to
 * `received`, and answering an error would invite a second replay that now conflicts. What the
 * object kept cannot undo the replay, only delay it: attempts are counted in D1, which step 1
 * zeroed; a lease of the previous life holds the delivery until it runs out and its alarm
 * requeues it; the "settled" hint lasts one lease period at most, after which the sweeper sends
 * the row again (test/http/admin/replay-lease-faults.test.ts).
 */
async function resetLease(env: Env, ref: RunRef): Promise<void> {
  try {
    await leaseFor(env, ref).reset();
  } catch (error) {
    console.error(`replay: could not reset the lease of ${describeRun(ref)}; it runs once the old lease or the sweeper lets it:`, describeError(error));
  }
}
