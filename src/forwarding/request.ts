/**
 * The forwarded request: what a backend receives for one attempt at one delivery.
 *
 * `POST` to the destination with the body exactly as the provider signed it and its content
 * type, signed with the Standard Webhooks scheme (https://www.standardwebhooks.com), so any
 * Standard Webhooks library verifies it:
 *
 * - `webhook-id`: the delivery's idempotency key (`whi_…`, attempt.ts `idempotencyKey`), the same
 *   on every retry and replay: the backend deduplicates on it;
 * - `webhook-timestamp`: when this attempt was signed (unix seconds): libraries refuse one more
 *   than 5 minutes off, so every attempt is signed afresh;
 * - `webhook-signature`: `v1,` + base64 HMAC-SHA256 of `{id}.{timestamp}.{body}` under the key;
 * - `webhook-inbox-source`, `-delivery-id`, `-event-type` (when known) and `-attempt`: what the
 *   delivery is, for the backend's routing and logs.
 *
 * Nothing else of the provider's request is sent: its signature and credential headers (an
 * `Authorization`, GitLab's token, …) stay in the inbox, and the content type is the only
 * header carried over.
 */
import { toBase64 } from "../base64";
import { hmac } from "../crypto";
import type { ForwardDestination } from "../config/destination";

/** One delivery, as forwarding needs it. */
export interface ForwardedDelivery {
  readonly source: string;
  /** The provider's delivery id. */
  readonly deliveryId: string;
  readonly eventType: string | null;
  /** The provider's Content-Type; null when unknown (then inferred from the body). */
  readonly contentType: string | null;
  readonly body: Uint8Array;
  /** Sent as `webhook-id`. */
  readonly idempotencyKey: string;
  /** 1 on the first run. */
  readonly attempt: number;
}

/** The headers that say what a forwarded delivery is, besides the Standard Webhooks three. */
export const DELIVERY_HEADERS = {
  source: "webhook-inbox-source",
  deliveryId: "webhook-inbox-delivery-id",
  eventType: "webhook-inbox-event-type",
  attempt: "webhook-inbox-attempt",
} as const;

/**
 * The `webhook-signature` value for `id`, `timestampSeconds` and `body` under `key`.
 * @example
 * // The published vector of the standard-webhooks libraries:
 * await signStandardWebhook(key, "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, bytes('{"test": 2432232314}'));
 * // "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
 */
export async function signStandardWebhook(key: Uint8Array, id: string, timestampSeconds: number, body: Uint8Array): Promise<string> {
  return `v1,${toBase64(await hmac("SHA-256", key, `${id}.${timestampSeconds}.`, body))}`;
}

/**
 * A header value that any HTTP stack carries unchanged: printable ASCII stays as it is, and `%`,
 * control characters, anything beyond ASCII, and spaces at either end (HTTP drops those) are
 * percent-encoded as UTF-8, so that `decodeURIComponent` (or Python's `urllib.parse.unquote`)
 * gives the original back. Provider ids and event types (`evt_1`, `orders/create`) pass through
 * untouched.
 * @example
 * headerValue(" café "); // "%20caf%C3%A9%20"
 */
export function headerValue(text: string): string {
  // toWellFormed: a lone surrogate (possible in a JSON string) would make encodeURIComponent throw.
  return text
    .toWellFormed()
    .replace(/[^\x20-\x24\x26-\x7e]+/gu, (run) => encodeURIComponent(run))
    .replace(/^ +| +$/g, (run) => "%20".repeat(run.length));
}

/** A form-encoded body: `name=value` pairs joined by `&` (Twilio, Slack commands). */
const FORM_BODY = /^[^=&\s]+=[^&]*(&[^=&\s]+=[^&]*)*$/;

/**
 * The Content-Type to send: the provider's, or for a delivery stored without one (before the
 * inbox kept request headers), what its body is: JSON, a form, or bytes.
 */
export function contentTypeOf(delivery: Pick<ForwardedDelivery, "contentType" | "body">): string {
  if (delivery.contentType) return delivery.contentType;
  const text = new TextDecoder().decode(delivery.body).trim();
  try {
    JSON.parse(text);
    return "application/json";
  } catch {
    return FORM_BODY.test(text) ? "application/x-www-form-urlencoded" : "application/octet-stream";
  }
}

/** The signed request for one attempt at `delivery`, signed at `nowSeconds`. */
export async function forwardRequest(destination: ForwardDestination, delivery: ForwardedDelivery, nowSeconds: number, signal: AbortSignal): Promise<Request> {
  const headers = new Headers({
    "content-type": contentTypeOf(delivery),
    "user-agent": "webhook-inbox",
    "webhook-id": delivery.idempotencyKey,
    "webhook-timestamp": String(nowSeconds),
    "webhook-signature": await signStandardWebhook(destination.key, delivery.idempotencyKey, nowSeconds, delivery.body),
    [DELIVERY_HEADERS.source]: headerValue(delivery.source),
    [DELIVERY_HEADERS.deliveryId]: headerValue(delivery.deliveryId),
    [DELIVERY_HEADERS.attempt]: String(delivery.attempt),
  });
  if (delivery.eventType !== null) headers.set(DELIVERY_HEADERS.eventType, headerValue(delivery.eventType));
  // redirect "manual": a 3xx comes back as it is. Following it would send a signed delivery to a
  // URL nobody configured (response.ts makes it a failure that says so).
  return new Request(destination.url, { method: "POST", headers, body: delivery.body, redirect: "manual", signal });
}
