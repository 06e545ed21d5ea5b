/**
 * What the consumer does when a delivery's commit fails with an infrastructure error, and how it
 * forgets a settled delivery's lease. Split from consumer.ts, which runs the batch.
 */
import { describeError } from "../handler-api/errors";
import type { AttemptEntry, ProcessingStore } from "../store";
import { failDelivery, type Outcome } from "./attempt";
import type { DeliveryLease } from "./lease";
import { describeRun, type RunRef } from "./messages";

/**
 * Runs in a row whose commit failed the same way (an infrastructure error, but with the database
 * taking the delivery's own deferral mark each time) before the delivery is set aside as failed:
 * its effects, not the database, are then at fault (they always deadlock, or always run past the
 * statement timeout). Spread over the infrastructure delays, 10 runs take about half an hour.
 */
export const COMMIT_FAILURE_LIMIT = 10;

/**
 * A commit that failed with an infrastructure error. Counted as nothing, and recorded as a deferral
 * naming the error, unless the delivery's history already ends in COMMIT_FAILURE_LIMIT − 1 such
 * deferrals with the same reason (`last`, read by the claim): then its effects, not the database,
 * are at fault (they always deadlock, or always run past the statement timeout), and it is failed
 * with that reason. Either write is a fenced write to the delivery's own row: if the database takes
 * nothing (an outage), the original error goes on to the infrastructure path and nothing counts.
 */
export async function commitFailed(
  error: unknown,
  last: AttemptEntry | null,
  env: Env,
  store: ProcessingStore,
  ref: RunRef,
  lease: DurableObjectStub<DeliveryLease>,
  token: number,
  run: { startedAtMs: number },
): Promise<Outcome> {
  const why = `its commit failed: ${describeError(error)}`;
  const before = last?.outcome === "deferred" && last.error !== null && sameText(last.error, `${why} (not counted)`) ? (last.count ?? 1) : 0;
  if (before + 1 >= COMMIT_FAILURE_LIMIT) {
    const reason = `${why} (gave up after ${before + 1} runs whose commit failed the same way while the database answered)`;
    let failed;
    try {
      failed = await failDelivery(env, store, ref, token, reason, run);
    } catch {
      throw error;
    }
    if (failed === "lease_lost") return { action: "ack", reason: "lease_lost" };
    if (failed === "failed") await settleQuietly(ref, lease, token, false);
    return { action: "ack", reason: "failed" };
  }
  let recorded;
  try {
    recorded = await store.recordResult(ref, token, { kind: "deferred", why }, Date.now(), run);
  } catch {
    throw error;
  }
  if (recorded === 0) return { action: "ack", reason: "lease_lost" };
  throw error;
}

/** The same text as a store keeps it (Postgres turns NUL and a lone surrogate into U+FFFD). */
function sameText(stored: string, text: string): boolean {
  return stored === text || stored === text.replaceAll("\u0000", "\uFFFD").toWellFormed();
}

/**
 * Forgets the lease of a settled delivery. A failure is only logged: the stored row already says
 * how it ended, and the lease's alarm requeues the delivery, whose next claim finds it settled.
 * `finished`: the store records the run done, and the lease's alarm may stay to find it so (a write
 * saved: lease/decisions.ts); false otherwise (failed, whose unsent dead letter the alarm may still
 * have to bring back; a fanned-out delivery, whose row stays open).
 */
export async function settleQuietly(ref: RunRef, lease: DurableObjectStub<DeliveryLease>, token: number, finished: boolean): Promise<void> {
  try {
    await lease.settle(token, finished);
  } catch (error) {
    console.error(`could not settle the lease of ${describeRun(ref)}; its alarm will clear it:`, describeError(error));
  }
}
