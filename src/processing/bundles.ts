/**
 * Settling a bundle: a queue message that carries several runs (messages.ts). Each run is
 * processed on its own, with its own lease and outcome, as a message of its own would be; the
 * bundle is acked once every run's outcome is known.
 *
 * A run that is to be retried leaves the bundle: it goes back on the queue as a message of its
 * own, with its own delay, and the bundle is acked. So a run's retries, backoff and dead letter
 * are what they were with a message each, and the runs that finished are not seen again.
 *
 * A bundle delivered a second time was not settled by the invocation that had it: that one died
 * (perhaps one of its runs killed it) or could not send the runs that were to be retried. Then it
 * is not processed as a whole again: each run goes back on the queue alone, so a run that kills
 * its invocation meets the takeover guard on its own (batch-gate.ts), and its neighbours do not
 * share its crash loop or its way to the dead-letter queue. Only if that send fails is the whole
 * bundle retried; a run already finished then only meets its settled row again.
 */
import { describeError } from "../handler-api/errors";
import type { Outcome } from "./attempt";
import { isDeliveryRef, isRunBundle, runMessage, type RunRef } from "./messages";

/** Where a run of a bundle goes back on the queue: the runs are split out, each with its delay. */
export interface BundleRun {
  readonly ref: RunRef;
  readonly outcome: Outcome;
}

/**
 * Acks `message` once the runs that are to be retried are back on the queue as messages of their
 * own; if they cannot be sent, retries the bundle after the longest of their delays. Never throws.
 */
export function settleBundle(message: Message<unknown>, runs: readonly BundleRun[], queue: Queue): Promise<void> {
  const again = runs.flatMap(({ ref, outcome }) => (outcome.action === "retry" ? [{ ref, delaySeconds: outcome.delaySeconds }] : []));
  // The longest of their delays: no run comes back before its own backoff (the bundle is split then).
  return sendAlone(message, again, queue, Math.max(0, ...again.map((run) => run.delaySeconds)), "split runs out of a bundle");
}

/** Retry delay of a bundle whose split could not be sent (the queue itself erring). */
export const SPLIT_RETRY_SECONDS = 10;

/**
 * Puts each run of a bundle delivered again back on the queue as its own message, unprocessed,
 * and acks the bundle; if that send fails, the bundle is retried. Never throws.
 */
export function splitBundle(message: Message<unknown>, refs: readonly RunRef[], queue: Queue): Promise<void> {
  return sendAlone(message, refs.map((ref) => ({ ref })), queue, SPLIT_RETRY_SECONDS, "split a bundle delivered again");
}

/**
 * Sends each of `runs` as a message of its own (with its delay, if any) and acks the bundle; if the
 * send fails, retries the bundle after `retrySeconds`. Never throws.
 */
async function sendAlone(message: Message<unknown>, runs: readonly { ref: RunRef; delaySeconds?: number }[], queue: Queue, retrySeconds: number, what: string): Promise<void> {
  if (runs.length === 0) return message.ack();
  try {
    await queue.sendBatch(runs.map(({ ref, delaySeconds }) => ({ body: runMessage(ref), contentType: "json" as const, delaySeconds })));
    message.ack();
  } catch (error) {
    console.error(`consumer: could not ${what} (${runs.length} runs); the bundle is retried in ${retrySeconds} s:`, describeError(error));
    message.retry({ delaySeconds: retrySeconds });
  }
}

/** One run of a batch: a message's own, or one of a bundle's. */
export interface BatchRun {
  readonly message: Message<unknown>;
  /** The run's message body, validated when it is processed. */
  readonly body: unknown;
  /** The bundle it came in, settled (`settleBundle`) when its last run is. */
  readonly bundle: { readonly runs: BundleRun[]; left: number } | null;
}

/**
 * The runs of a batch, in its order: a message's own, and each of a bundle's. A bundle delivered
 * again is split instead (`splitBundle`, started here: `splits`), and an empty one acked.
 */
export function runsOf(batch: MessageBatch<unknown>, queue: Queue): { units: BatchRun[]; splits: Promise<void>[] } {
  const units: BatchRun[] = [];
  const splits: Promise<void>[] = [];
  for (const message of batch.messages) {
    if (!isRunBundle(message.body)) {
      units.push({ message, body: message.body, bundle: null });
      continue;
    }
    const refs = bundledRuns(message.body.runs);
    if (message.attempts > 1) splits.push(splitBundle(message, refs, queue));
    else if (refs.length === 0) message.ack();
    else {
      const bundle = { runs: [], left: refs.length };
      for (const ref of refs) units.push({ message, body: ref, bundle });
    }
  }
  return { units, splits };
}

/** A bundle's runs, each as its own message would carry it; a malformed one is dropped loudly. */
function bundledRuns(bodies: readonly unknown[]): RunRef[] {
  return bodies.flatMap((body) => {
    if (isDeliveryRef(body)) return [runMessage(body)];
    console.error("dropping a malformed run of a bundle:", JSON.stringify(body)?.slice(0, 200));
    return [];
  });
}
