/**
 * A stored delivery's identity: its source and the provider's delivery id (the primary key).
 * Below both the store and processing, so that each can name it without importing the other.
 */
export interface DeliveryRef {
  readonly source: string;
  readonly id: string;
}

/**
 * What one run of the consumer works on: a delivery, or one subscriber's run of a delivery that was
 * fanned out to several (store/d1/subscriber-runs.ts). The queue's messages, the leases and the
 * store's processing calls all take one.
 */
export interface RunRef extends DeliveryRef {
  /** Absent: the delivery itself (its one subscriber, or its fan-out). */
  readonly subscriber?: string;
}

/** True for a subscriber's run. */
export function isSubscriberRun(ref: RunRef): ref is Required<RunRef> {
  return typeof ref.subscriber === "string";
}
