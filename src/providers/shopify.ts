/**
 * Shopify (https://shopify.dev/docs/apps/build/webhooks/verify-deliveries).
 *
 * `X-Shopify-Hmac-Sha256: <base64>`, HMAC-SHA256 of the raw body with the app's client secret.
 * Shopify Events (developer preview) send the same headers without the `X-` prefix, so both
 * spellings are read. Nothing time-related is signed. The delivery id is `X-Shopify-Webhook-Id`
 * (kept across the 8 retries); older deliveries only carry `X-Shopify-Event-Id`, which is shared
 * by the webhooks of several subscriptions to one event, so it is only the fallback. Neither id is
 * signed: a replay under a fresh id is caught by the body's digest (`dedupeOnContent`).
 */
import { firstHeader, fromBase64, MAX_SIGNATURE_HEADER_LENGTH, matchingSecret, rotated } from "./crypto";
import { contentDigest, refuse, type ContentDedupOptions, type Provider, type SignedRequest, type Verification } from "./types";

/**
 * A Shopify verifier. After a client-secret rotation Shopify may sign with the old secret for up
 * to an hour: keep the old one in `SHOPIFY_WEBHOOK_SECRET_PREVIOUS` for at least that long.
 * @example
 * const sources = { shopify: shopify() };
 */
export function shopify(options: ContentDedupOptions = {}): Provider {
  const dedupeOnContent = options.dedupeOnContent ?? true;
  return {
    kind: "shopify",
    grade: { bodySigned: true, timestampSigned: false, deliveryIdSigned: false, secretInClear: false },
    dedupKey: "`X-Shopify-Webhook-Id` (not signed) and the body's digest",
    signsDeliveryId: false,
    async verify(request: SignedRequest, secrets: readonly string[]): Promise<Verification> {
      const header = firstHeader(request.headers, "x-shopify-hmac-sha256", "shopify-hmac-sha256");
      if (!header) return refuse("missing X-Shopify-Hmac-Sha256 header");
      if (header.length > MAX_SIGNATURE_HEADER_LENGTH) return refuse("signature header too long");
      const signature = fromBase64(header.trim());
      if (signature?.length !== 32) return refuse("X-Shopify-Hmac-Sha256 is not a base64 SHA-256 digest");
      const matched = await matchingSecret("SHA-256", secrets, [signature], [request.body]);
      if (matched < 0) return refuse("signature mismatch");
      const headers = request.headers;
      return {
        ok: true,
        ...rotated(matched),
        deliveryId: firstHeader(headers, "x-shopify-webhook-id", "shopify-webhook-id", "x-shopify-event-id", "shopify-event-id"),
        eventType: firstHeader(headers, "x-shopify-topic", "shopify-topic"),
        ...(await contentDigest(dedupeOnContent, request.body)),
      };
    },
  };
}
