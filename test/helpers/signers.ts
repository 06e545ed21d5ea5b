/**
 * Signers for tests, built on the providers' official SDKs, so that our verifiers are never
 * the only judge of our own format.
 */
import { Webhook as StandardWebhook } from "standardwebhooks";
import { env } from "cloudflare:workers";

export const BASE_URL = "https://inbox.example.com";

/** Headers signed by the official `standardwebhooks` library. */
export function standardHeaders(body: string, options: { id?: string; secret?: string; at?: Date } = {}) {
  const id = options.id ?? `msg_${crypto.randomUUID()}`;
  const at = options.at ?? new Date();
  const signer = new StandardWebhook(options.secret ?? env.STANDARD_WEBHOOK_SECRET);
  return {
    "webhook-id": id,
    "webhook-timestamp": String(Math.floor(at.getTime() / 1000)),
    "webhook-signature": signer.sign(id, at, body),
    "content-type": "application/json",
  };
}

/** A signed Standard Webhooks POST to `/webhooks/standard`. */
export function standardRequest(body: string, options: Parameters<typeof standardHeaders>[1] = {}): Request {
  return new Request(`${BASE_URL}/webhooks/standard`, { method: "POST", headers: standardHeaders(body, options), body });
}
