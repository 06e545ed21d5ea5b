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
