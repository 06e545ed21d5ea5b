/** Puts stored deliveries (and fanned-out deliveries' runs) on the processing queue. */
import { runMessage, type DeliveryRef, type RunRef } from "./messages";

/** sendBatch takes at most 100 messages (and 256 KB) per call. */
const SEND_BATCH_LIMIT = 100;

/**
 * Enqueues deliveries in as few queue operations as possible. Never throws: the deliveries are
 * already saved, and a failed send is recovered by the sweeper, so the failure is logged and
 * the caller carries on. Returns whether everything was sent.
 */
export async function enqueueDeliveries(env: Env, refs: readonly RunRef[]): Promise<boolean> {
  try {
    if (refs.length === 1) {
      await env.DELIVERIES.send(runMessage(refs[0]!), { contentType: "json" });
      return true;
    }
    for (let start = 0; start < refs.length; start += SEND_BATCH_LIMIT) {
      const chunk = refs.slice(start, start + SEND_BATCH_LIMIT).map((ref) => ({ body: runMessage(ref), contentType: "json" as const }));
      await env.DELIVERIES.sendBatch(chunk);
    }
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
 * one `sendBatch` instead of one `send` each. The request that opens a window sends it, under
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
