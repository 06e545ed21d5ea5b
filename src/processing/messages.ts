/**
 * What travels on the queues: a reference to a stored delivery, never its body (the D1 row is
 * the single copy; queue messages are capped at 128 KB and bodies may be 1 MiB).
 */
import type { DeliveryRef } from "../delivery-ref";

export type { DeliveryRef };

/** A message on the dead-letter queue: the delivery and why it gave up. */
export interface DeadLetter extends DeliveryRef {
  readonly error: string;
}

/** The key of a delivery's lease object: unambiguous, unlike joining the parts with a separator. */
export function leaseName(ref: DeliveryRef): string {
  return JSON.stringify([ref.source, ref.id]);
}

/** Validates a queue message body; anything else is a bug or tampering, and is dropped loudly. */
export function isDeliveryRef(value: unknown): value is DeliveryRef {
  if (value === null || typeof value !== "object") return false;
  const { source, id } = value as Record<string, unknown>;
  return typeof source === "string" && typeof id === "string" && source.length > 0 && id.length > 0;
}

/** The dead-letter queue's name (wrangler.toml); its batches go to the dead-letter recorder. */
export const DEAD_LETTER_QUEUE = "webhook-deliveries-dlq";
