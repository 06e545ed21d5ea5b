/**
 * The generic webhook: the incident as JSON, signed with Standard Webhooks
 * (https://www.standardwebhooks.com) under ALERT_WEBHOOK_SECRET, the way forwarded deliveries are
 * signed (forwarding/request.ts), so any Standard Webhooks library verifies it. `webhook-id` is the
 * message's (`alert_<id>`), the same on every retry: the receiver deduplicates on it.
 *
 * Body: `{ type: "incident.opened" | "incident.reminder" | "incident.resolved", timestamp, data }`,
 * the envelope the Standard Webhooks spec suggests, `data` being the message (message.ts).
 */
import { signStandardWebhook } from "../../forwarding/request";
import type { AlertMessage } from "../message";

export function webhookPayload(message: AlertMessage, timestamp: string): Record<string, unknown> {
  return { type: `incident.${message.kind}`, timestamp, data: message };
}

/** The three Standard Webhooks headers for `body`, signed at `nowSeconds`. */
export async function webhookHeaders(key: Uint8Array, messageId: number, nowSeconds: number, body: Uint8Array): Promise<Record<string, string>> {
  const id = `alert_${messageId}`;
  return {
    "webhook-id": id,
    "webhook-timestamp": String(nowSeconds),
    "webhook-signature": await signStandardWebhook(key, id, nowSeconds, body),
  };
}
