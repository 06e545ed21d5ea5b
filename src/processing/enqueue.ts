/** Puts stored deliveries (and fanned-out deliveries' runs) on the processing queue. */
import { packRuns, type DeliveryRef, type RunRef } from "./messages";

/** sendBatch takes at most 100 messages and 256 KB per call (the bytes kept well under, for the framing). */
const SEND_BATCH_LIMIT = 100;
const SEND_BATCH_BYTES = 192 * 1024;

/**
 * Sends runs in as few queue operations as possible: up to MAX_RUNS_PER_MESSAGE share a message
 * (messages.ts), and the messages share a `sendBatch`. Throws what the queue throws.
 */
export async function sendRuns(queue: Queue, refs: readonly RunRef[]): Promise<void> {
  const bodies = packRuns(refs);
  if (bodies.length === 0) return;
  if (bodies.length === 1) {
    await queue.send(bodies[0]!, { contentType: "json" });
    return;
  }
  let chunk: MessageSendRequest[] = [];
  let bytes = 0;
  for (const body of bodies) {
    const size = JSON.stringify(body).length * 3; // UTF-16 units to UTF-8 bytes, at worst
    if (chunk.length === SEND_BATCH_LIMIT || (chunk.length > 0 && bytes + size > SEND_BATCH_BYTES)) {
      await queue.sendBatch(chunk);
      chunk = [];
      bytes = 0;
    }
    chunk.push({ body, contentType: "json" });
    bytes += size;
  }
  await queue.sendBatch(chunk);
}

/**
 * Enqueues deliveries (`sendRuns`). Never throws: the deliveries are already saved, and a failed
 * send is recovered by the sweeper, so the failure is logged and the caller carries on. Returns
 * whether everything was sent.
 */
export async function enqueueDeliveries(env: Env, refs: readonly RunRef[]): Promise<boolean> {
  try {
    await sendRuns(env.DELIVERIES, refs);
    return true;
  } catch (error) {
    console.error("enqueue failed; the sweeper will pick the deliveries up:", error instanceof Error ? error.message : String(error));
    return false;
  }
}

/** Enqueues one delivery (see `enqueueDeliveries`). */
export function enqueueDelivery(env: Env, ref: RunRef): Promise<boolean> {
  return enqueueDeliveries(env, [ref]);
}

/** How long the first new delivery of a burst waits for others to share its queue operation. */
export const SEND_WINDOW_MS = 20;

/** The part of an execution context this needs (Hono's and the runtime's types differ). */
interface WaitUntil {
  waitUntil(promise: Promise<unknown>): void;
}

/** Deliveries waiting for the current window's send, per producer binding. */
const windows = new Map<Queue, DeliveryRef[]>();

/**
 * Enqueues a delivery together with the others stored by this isolate within SEND_WINDOW_MS:
 * one message for up to MAX_RUNS_PER_MESSAGE of them instead of one each. The request that opens a window sends it, under
 * its own `waitUntil`; the others only add to it and never wait for another request's I/O (a
 * request that did would be cancelled as hung). Nobody waits for the send itself: the
 * delivery is stored already, and a lost send is what the sweeper recovers.
 */
export function enqueueSoon(env: Env, ctx: WaitUntil, ref: DeliveryRef): void {
  const open = windows.get(env.DELIVERIES);
  if (open) {
    open.push(ref);
    return;
  }
  const window = [ref];
  windows.set(env.DELIVERIES, window);
  ctx.waitUntil(
    (async () => {
      try {
        await new Promise((resolve) => setTimeout(resolve, SEND_WINDOW_MS));
      } finally {
        windows.delete(env.DELIVERIES);
      }
      await enqueueDeliveries(env, window);
    })(),
  );
}
