/**
 * The queue consumer: each message names a stored delivery; process it effectively once.
 *
 * A message names a run, or several stored together (a bundle: bundles.ts); each is processed on
 * its own. Per delivery: claim its lease (DeliveryLease), read it from the store (a takeover is
 * recorded there first, store/d1/lifecycle.ts), run the user's handler while the lease is renewed,
 * commit the handler's effects together with the `done` mark in one fenced transaction, settle
 * the lease, and ack the message. A delivery's lease covers only its own work, and is renewed from
 * its claim until its result is recorded: a slow handler keeps its delivery, and holds up neither
 * the leases nor the results of the others in its batch. What a handler throws
 * decides the rest (attempt.ts): `PermanentError` fails at once; `DeferredError` (a busy forward
 * destination) puts it back on the queue, counting nothing; anything else retries with
 * backoff until MAX_ATTEMPTS, then fails. Failed deliveries go to the dead-letter queue.
 *
 * One store serves the whole batch: with D1, the mark and commit statements of deliveries that
 * get there at about the same time share a round trip (store/d1/batcher.ts), and if a shared commit
 * fails, each delivery commits again alone, so only the one at fault is affected; with Postgres,
 * they share a few connections, closed when the batch is done.
 *
 * Infrastructure failures (the database or the lease object erring, a batch that commits and then reports
 * an error) never use up an attempt: the lease is released and the message retried with a
 * growing delay; only a handler that ran counts. Every message is acked only once its delivery is
 * handled, recorded, or known to be someone else's (busy, settled, lease lost).
 *
 * Three guards keep one delivery's trouble its own:
 * - a takeover (its last run vanished: perhaps it killed its invocation) runs alone in its batch
 *   (batch-gate.ts), so a crash loop is charged only to the delivery that causes it;
 * - a lease that is lost, or that cannot be renewed, stops the work at once (keep-lease.ts): no
 *   forward leaves after, and a lease that lapsed while its worker lived counts no run;
 * - a commit that keeps failing the same way while the database takes the delivery's other
 *   writes (an effect that always deadlocks or times out) is given up on after
 *   COMMIT_FAILURE_LIMIT such runs, while an outage (nothing written at all) fails nothing.
 */
import { loadConfig, QUEUE_MAX_DELAY_SECONDS, type InboxConfig } from "../config";
import { CUT_SHORT, openBatchStore, type ProcessingStore } from "../store";
import { handleFailure, runHandler, sendDeadLetter, type Outcome } from "./attempt";
import { commitFailed, settleQuietly } from "./commit-failure";
export { COMMIT_FAILURE_LIMIT } from "./commit-failure";
import { DEFAULT_SUBSCRIBER, DeferredError, PermanentError, type Subscriber, type SubscriberResolver } from "../handler-api";
import { describeError, InfrastructureError } from "../handler-api/errors";
import { BatchGate } from "./batch-gate";
import { BatchTimeUpError, holdLease, LeaseLapsedError, LeaseLostError, withDeadline, type HeldLease } from "./keep-lease";
import { leaseFor, type DeliveryLease, type LeaseClaim } from "./lease";
import { settleMessage } from "./requeue";
import { runsOf, settleBundle } from "./bundles";
import { describeRun, isDeliveryRef, isSubscriberRun, runMessage, type RunRef } from "./messages";
import { chooseRun, queueRuns, scheduleOf } from "./subscribers";

export type { Outcome } from "./attempt";

/**
 * Deliveries of one batch in flight at once: enough to overlap their I/O, bounded so that a
 * batch of large bodies (up to 1 MiB each) never holds more than a few in memory.
 */
export const BATCH_CONCURRENCY = 8;
/**
 * A queue consumer invocation runs for 15 minutes at most. A batch starts no delivery once less
 * than a minute (or HANDLER_TIMEOUT_SECONDS, if shorter) is left of 14 of them, and cuts handlers
 * short at that mark: those and the ones not started are retried, using up no attempt, and there
 * is a minute left to record the results. A deferral is a queue retry, or a fresh message once
 * the message was delivered a few times (requeue.ts).
 */
export const BATCH_BUDGET_MS = 14 * 60_000;
/** A delivery is not started with less than this (or HANDLER_TIMEOUT_SECONDS, if shorter) left of the budget. */
export const MIN_HANDLER_WINDOW_MS = 60_000;
/** Retry delays after an infrastructure error: 10 s, doubling with the message's attempts, at most 5 min. */
export const INFRASTRUCTURE_RETRY_SECONDS = 10;
export const INFRASTRUCTURE_RETRY_MAX_SECONDS = 300;

/** What the jobs of one batch share. */
interface BatchContext {
  readonly env: Env;
  readonly config: InboxConfig;
  /** A source's subscribers (the Worker wires it: src/index.ts). */
  readonly resolve: SubscriberResolver;
  /** The batch's store: its claims and commits share round trips where the store can. */
  readonly store: ProcessingStore;
  /** When the batch's time is up (ms, see BATCH_BUDGET_MS). */
  readonly deadlineMs: number;
  /** The batch's gate: suspects (takeovers) run alone (batch-gate.ts). */
  readonly gate: BatchGate;
}

/**
 * Processes a batch from `webhook-deliveries`. Each run is acked or retried on its own, as soon as
 * it is handled; a bundle's, once the last of them is (bundles.ts). Returns the outcome of each run
 * processed, in the batch's order; a bundle delivered again is split and has none.
 */
export async function consumeDeliveries(batch: MessageBatch<unknown>, env: Env, resolve: SubscriberResolver): Promise<Outcome[]> {
  const config = loadConfig(env);
  const store = openBatchStore(env);
  const context: BatchContext = {
    env,
    config,
    resolve,
    store,
    deadlineMs: Date.now() + BATCH_BUDGET_MS,
    gate: new BatchGate(),
  };
  const { units, splits } = runsOf(batch, env.DELIVERIES);
  const outcomes: Outcome[] = new Array(units.length);
  let next = 0;
  const worker = async () => {
    while (next < units.length) {
      const index = next++;
      const { message, body, bundle } = units[index]!;
      const outcome = await processMessage(message, body, context);
      outcomes[index] = outcome;
      if (bundle === null) await settleMessage(message, isDeliveryRef(body) ? runMessage(body) : null, outcome, env.DELIVERIES);
      else {
        bundle.runs.push({ ref: body as RunRef, outcome });
        if (--bundle.left === 0) await settleBundle(message, bundle.runs, env.DELIVERIES);
      }
    }
  };
  try {
    await Promise.all([...splits, ...Array.from({ length: Math.min(BATCH_CONCURRENCY, units.length) }, worker)]);
  } finally {
    await store.close();
  }
  return outcomes;
}

async function processMessage(message: Message<unknown>, body: unknown, context: BatchContext): Promise<Outcome> {
  if (!isDeliveryRef(body)) {
    // Only a bug or a hand-sent message looks like this; there is no delivery to record it on.
    console.error("dropping a malformed queue message:", JSON.stringify(body)?.slice(0, 200));
    return { action: "ack", reason: "malformed" };
  }
  const ref = runMessage(body);
  if (context.deadlineMs - Date.now() < Math.min(context.config.handlerTimeoutSeconds * 1000, MIN_HANDLER_WINDOW_MS)) {
    // Too late in the invocation to start: the next one takes it, unclaimed, nothing counted.
    return { action: "retry", reason: "deferred", delaySeconds: 0 };
  }
  let subscribers: readonly Subscriber[];
  try {
    subscribers = context.resolve(ref.source, context.env);
  } catch (error) {
    // A wiring the configuration refuses (two subscribers of one name): retried, nothing counted.
    return infrastructureFailure(ref, message, error);
  }
  const lease = leaseFor(context.env, ref);
  const askedAtMs = Date.now();
  let claim;
  try {
    claim = await lease.claim(ref);
  } catch (error) {
    return infrastructureFailure(ref, message, error);
  }
  // Someone holds it (its renewals keep it, or its alarm requeues it if they die), or it is finished.
  if (claim.kind !== "granted") return { action: "ack", reason: claim.kind };
  const held = holdLease(lease, claim.token, context.config.leaseSeconds * 1000, askedAtMs);
  let leave;
  try {
    // A takeover waits until nothing else of the batch runs; the rest wait behind it.
    leave = await context.gate.enter(claim.takeover, held.signal);
  } catch (error) {
    held.stop();
    // Lost while waiting: the new holder has it. Lapsed: nothing was recorded, the lease runs out.
    if (error instanceof LeaseLostError) return { action: "ack", reason: "lease_lost" };
    return infrastructureFailure(ref, message, error);
  }
  try {
    return await processClaimed(ref, lease, claim, held, context, subscribers);
  } catch (error) {
    if (error instanceof LeaseLostError) return { action: "ack", reason: "lease_lost" };
    // Nothing of this attempt was counted: give the lease back so that the retry can claim at once.
    const outcome = infrastructureFailure(ref, message, error);
    await lease.release(claim.token, Date.now() + outcome.delaySeconds * 1000).catch((releaseError: unknown) => {
      // The lease then runs out by itself and the alarm requeues the delivery, counting nothing.
      console.error(`could not release the lease of ${describeRun(ref)}:`, describeError(releaseError));
    });
    return outcome;
  } finally {
    leave();
    held.stop();
  }
}

/** From a granted claim to the delivery's outcome. Throws on infrastructure errors. */
async function processClaimed(
  ref: RunRef,
  lease: DurableObjectStub<DeliveryLease>,
  { token, takeover, previousToken }: Extract<LeaseClaim, { kind: "granted" }>,
  held: HeldLease,
  { env, config, store, deadlineMs }: BatchContext,
  subscribers: readonly Subscriber[],
): Promise<Outcome> {
  // A free lease's claim only reads the row; a takeover is recorded first (store/d1/lifecycle.ts).
  const { maxAttempts } = scheduleOf(subscribers, ref, config);
  const claimed = await store.claim(ref, token, takeover ? { previousToken, maxAttempts } : null, Date.now());
  if (claimed.kind === "gone") {
    // Done or failed already (the stored row is the judge), or a newer claim got there first.
    await settleQuietly(ref, lease, token, false);
    return { action: "ack", reason: "settled" };
  }
  if (claimed.kind === "gave_up") {
    // Unsent, the lease stays unsettled: its alarm brings the delivery back to send it again.
    if (await sendDeadLetter(env, ref, claimed.error)) await settleQuietly(ref, lease, token, false);
    return { action: "ack", reason: "exhausted" };
  }

  if (claimed.kind === "fanned") {
    // Fanned out before (its worker died before it queued every run, or the sweeper found it
    // waiting): make sure each unsettled run is queued; a run queued twice meets its own lease.
    await queueRuns(env, ref, await store.pendingRuns(ref, Date.now()));
    await settleQuietly(ref, lease, token, false);
    return { action: "ack", reason: "fanned" };
  }

  const choice = chooseRun(subscribers, ref, claimed.delivery, config);
  if (choice.kind === "fan_out") {
    // Several subscribers take it: each gets a run of its own, queued, and this delivery's row
    // becomes their summary. Queued after the fan-out is recorded, so that no run goes unrecorded.
    if (!(await store.fanOut(ref, token, choice.subscribers, Date.now()))) return { action: "ack", reason: "lease_lost" };
    await queueRuns(env, ref, choice.subscribers);
    await settleQuietly(ref, lease, token, false);
    return { action: "ack", reason: "fanned" };
  }

  // The attempt history records when each run started and how long it took (store/d1/attempt-log.ts);
  // a delivery one subscriber took records whose run it was on its own row.
  const run = { startedAtMs: Date.now(), subscriber: choice.kind === "run" && !isSubscriberRun(ref) ? choice.subscriber : null };
  if (choice.kind === "unknown_subscriber") {
    // Configured when the delivery fanned out, gone since: failed, to be replayed once it is back.
    const error = new PermanentError(`subscriber "${choice.subscriber}" is no longer configured for source ${ref.source}`);
    return handleFailure(error, env, store, config, ref, lease, token, claimed.attempt, run);
  }
  let handled;
  try {
    // A few seconds of the batch's time are kept for recording the result. When that, not the
    // handler's own timeout, is the limit, a handler cut short there does not use up its attempt.
    const handlerMs = config.handlerTimeoutSeconds * 1000;
    const leftMs = deadlineMs - Date.now() - 5_000;
    const timeUp = leftMs < handlerMs ? () => new BatchTimeUpError("the consumer invocation's time ran out") : undefined;
    handled = await withDeadline(
      (signal) => runHandler(env, store, choice.handlers, choice.subscriber ?? DEFAULT_SUBSCRIBER, ref, claimed.delivery, claimed.attempt, signal),
      Math.max(1_000, Math.min(handlerMs, leftMs)),
      timeUp,
      held.signal,
    );
  } catch (error) {
    // Taken over: the new holder's result stands; this run records nothing (the fence would refuse it).
    if (error instanceof LeaseLostError) throw error;
    // The lease could not be renewed: recorded as not counted (a takeover must not charge a run
    // whose worker lived), then retried as an infrastructure failure.
    if (error instanceof LeaseLapsedError) {
      await store.recordResult(ref, token, { kind: "deferred", why: "stopped: its lease could not be renewed" }, Date.now(), run);
      throw error;
    }
    // A store call made for the handler failed: the database's fault, not counted.
    if (error instanceof InfrastructureError) throw error;
    // Cut short by the batch's time limit, or told to wait (its forward destination is busy):
    // not the delivery's fault, so its run is not counted.
    if (error instanceof BatchTimeUpError || error instanceof DeferredError) {
      const deferred = error instanceof DeferredError ? error : null;
      const delaySeconds = deferred ? Math.min(deferred.delaySeconds, QUEUE_MAX_DELAY_SECONDS) : 0;
      const why = deferred?.message ?? CUT_SHORT;
      if ((await store.recordResult(ref, token, { kind: "deferred", why }, Date.now(), run)) === 0) return { action: "ack", reason: "lease_lost" };
      await lease.release(token, Date.now() + delaySeconds * 1000);
      return { action: "retry", reason: "deferred", delaySeconds };
    }
    return handleFailure(error, env, store, choice.schedule, ref, lease, token, claimed.attempt, run);
  }

  // Taken over while the handler finished: nothing to commit (the fence would refuse it anyway).
  if (held.signal.reason instanceof LeaseLostError) throw held.signal.reason;
  // Infrastructure errors are thrown (and retried, counting nothing); a commit that landed
  // although the database reported an error counts as committed (store.ts).
  let commit;
  try {
    commit = await store.commitDone(ref, token, { handled: handled.handled, effects: handled.effects, run }, Date.now());
  } catch (error) {
    return commitFailed(error, claimed.last, env, store, ref, lease, token, run);
  }
  // A lost lease: another worker took over, its result stands and ours committed nothing.
  if (commit.kind === "lease_lost") return { action: "ack", reason: "lease_lost" };
  if (commit.kind === "refused") {
    // The handler's own effects broke the commit (a constraint, a stale order-guard version).
    const error = commit.permanent ? new PermanentError(describeError(commit.error)) : commit.error;
    return handleFailure(error, env, store, choice.schedule, ref, lease, token, claimed.attempt, run);
  }
  await settleQuietly(ref, lease, token, true);
  return { action: "ack", reason: handled.handled ? "done" : "unhandled" };
}

function infrastructureFailure(ref: RunRef, message: Message<unknown>, error: unknown): Extract<Outcome, { action: "retry" }> {
  const delaySeconds = Math.min(INFRASTRUCTURE_RETRY_MAX_SECONDS, INFRASTRUCTURE_RETRY_SECONDS * 2 ** Math.max(0, message.attempts - 1));
  console.error(`processing ${describeRun(ref)} hit an infrastructure error, retrying in ${delaySeconds} s:`, describeError(error));
  return { action: "retry", reason: "infrastructure", delaySeconds };
}
