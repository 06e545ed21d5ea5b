/** Puts stored deliveries on the processing queue. */
import type { DeliveryRef } from "./messages";

/**
 * Enqueues one delivery. Never throws: the delivery is already saved, and a failed send is
 * recovered by the sweeper, so the failure is logged and the caller carries on.
 */
export async function enqueueDelivery(env: Env, ref: DeliveryRef): Promise<boolean> {
  try {
    await env.DELIVERIES.send(ref, { contentType: "json" });
    return true;
  } catch (error) {
    console.error("enqueue failed; the sweeper will pick the delivery up:", error instanceof Error ? error.message : String(error));
    return false;
  }
}
