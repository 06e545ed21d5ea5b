/**
 * What travels on the queues: a reference to a stored delivery, never its body (the D1 row is
 * the single copy; queue messages are capped at 128 KB and bodies may be 1 MiB).
 */
import type { DeliveryRef, RunRef } from "../delivery-ref";
export { isSubscriberRun } from "../delivery-ref";

export type { DeliveryRef, RunRef };

/** A message on the dead-letter queue: the delivery (and the subscriber, for a fanned-out one) and why it gave up. */
export interface DeadLetter extends RunRef {
  readonly error: string;
}

/**
 * The key of a run's lease object: unambiguous, unlike joining the parts with a separator. A
 * delivery's is `[source, id]`, as it always was; a subscriber's run of it `[source, id, subscriber]`.
 */
export function leaseName(ref: RunRef): string {
  return JSON.stringify(ref.subscriber === undefined ? [ref.source, ref.id] : [ref.source, ref.id, ref.subscriber]);
}

/** Validates a queue message body (a `RunRef`); anything else is a bug or tampering, and is dropped loudly. */
export function isDeliveryRef(value: unknown): value is RunRef {
  if (value === null || typeof value !== "object") return false;
  const { source, id, subscriber } = value as Record<string, unknown>;
  if (subscriber !== undefined && (typeof subscriber !== "string" || subscriber.length === 0)) return false;
  return typeof source === "string" && typeof id === "string" && source.length > 0 && id.length > 0;
}

/**
 * A message carrying the runs stored (or queued) together: one queue write, read and delete for
 * all of them, where a message each cost three operations per delivery. The consumer takes each
 * run on its own, with its own lease, outcome and retry (consumer.ts, bundles.ts).
 */
export interface RunBundle {
  readonly runs: readonly RunRef[];
}

/**
 * At most this many runs share a message: a burst then pays a tenth of the queue operations, and
 * a consumer batch (50 messages, wrangler.toml) holds at most 500 runs, within what one invocation
 * does in its 14 minutes, its subrequests and its CPU (a crash loses no more than that much work
 * in progress, which the split on redelivery then isolates). A message of the longest ids
 * (255 characters) stays within one 64 KB operation.
 */
export const MAX_RUNS_PER_MESSAGE = 10;

/** True for a bundle's body (its runs are validated one by one: `isDeliveryRef`). */
export function isRunBundle(value: unknown): value is { readonly runs: readonly unknown[] } {
  return value !== null && typeof value === "object" && Array.isArray((value as { runs?: unknown }).runs);
}

/** The message bodies that carry `refs`: a run alone as it always was, several as bundles. */
export function packRuns(refs: readonly RunRef[]): (RunRef | RunBundle)[] {
  const bodies: (RunRef | RunBundle)[] = [];
  for (let start = 0; start < refs.length; start += MAX_RUNS_PER_MESSAGE) {
    const runs = refs.slice(start, start + MAX_RUNS_PER_MESSAGE).map(runMessage);
    bodies.push(runs.length === 1 ? runs[0]! : { runs });
  }
  return bodies;
}

/** The queue message of a run: exactly its parts (a message read back may carry others). */
export function runMessage(ref: RunRef): RunRef {
  return ref.subscriber === undefined ? { source: ref.source, id: ref.id } : { source: ref.source, id: ref.id, subscriber: ref.subscriber };
}

/** The dead-letter queue's name (wrangler.toml); its batches go to the dead-letter recorder. */
export const DEAD_LETTER_QUEUE = "webhook-deliveries-dlq";

/** A run as logs name it: `source/id`, and `→ subscriber` for a subscriber's run. */
export function describeRun(ref: RunRef): string {
  return ref.subscriber === undefined ? `${ref.source}/${ref.id}` : `${ref.source}/${ref.id} → ${ref.subscriber}`;
}
