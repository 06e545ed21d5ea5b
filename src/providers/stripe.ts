/**
 * Stripe (https://docs.stripe.com/webhooks/signature).
 *
 * `Stripe-Signature: t=<unix seconds>,v1=<hex>[,v1=<hex>…]` over `{t}.{raw body}`, HMAC-SHA256.
 * The key is the whole `whsec_…` string as UTF-8 (not base64-decoded, unlike Standard Webhooks).
 * During a secret roll Stripe sends one `v1` per active secret; any one may match. Other schemes
 * (`v0`, test-mode legacy) are ignored. The delivery id is the event's `id` (`evt_…`), which is
 * the same on every retry.
 */
import { checkTimestamp, fromHex, jsonString, MAX_SIGNATURE_HEADER_LENGTH, matchingSecret, parseJson, rotated } from "./crypto";
import { refuse, type Provider, type SignedRequest, type Verification } from "./types";

export interface StripeOptions {
  /** Allowed clock difference, past and future. Default 300 s, as stripe-node. */
  readonly toleranceSeconds?: number;
}

/** `t` and every decodable `v1` of a `Stripe-Signature` header; null when `t` is missing or repeated. */
function parseStripeSignature(header: string): { timestamp: string; signatures: Uint8Array[] } | null {
  let timestamp: string | null = null;
  const signatures: Uint8Array[] = [];
  for (const item of header.split(",")) {
    const separator = item.indexOf("=");
    if (separator < 0) continue;
    const key = item.slice(0, separator).trim();
    const value = item.slice(separator + 1).trim();
    if (key === "t") {
      // Two `t`s would make "which timestamp was signed" ambiguous: refuse rather than guess.
      if (timestamp !== null) return null;
      timestamp = value;
    } else if (key === "v1") {
      const decoded = fromHex(value);
      if (decoded?.length === 32) signatures.push(decoded);
    }
  }
  return timestamp === null ? null : { timestamp, signatures };
}

/**
 * A Stripe verifier.
 * @example
 * const sources = { stripe: stripe(), "stripe-connect": stripe({ toleranceSeconds: 600 }) };
 */
export function stripe(options: StripeOptions = {}): Provider {
  const tolerance = options.toleranceSeconds ?? 300;
  return {
    kind: "stripe",
    grade: { bodySigned: true, timestampSigned: true, deliveryIdSigned: true, secretInClear: false },
    dedupKey: "body `id` (`evt_…`, signed)",
    signsDeliveryId: true,
    async verify(request: SignedRequest, secrets: readonly string[], nowSeconds: number): Promise<Verification> {
      const header = request.headers.get("stripe-signature");
      if (!header) return refuse("missing Stripe-Signature header");
      if (header.length > MAX_SIGNATURE_HEADER_LENGTH) return refuse("signature header too long");
      const parsed = parseStripeSignature(header);
      if (!parsed) return refuse("Stripe-Signature has no single t=");
      const stale = checkTimestamp(parsed.timestamp, nowSeconds, tolerance);
      if (stale) return refuse(stale);
      if (parsed.signatures.length === 0) return refuse("no v1 signature");
      const matched = await matchingSecret("SHA-256", secrets, parsed.signatures, [`${parsed.timestamp}.`, request.body]);
      if (matched < 0) {
        return refuse("signature mismatch");
      }
      const event = parseJson(request.body);
      return { ok: true, deliveryId: jsonString(event, "id"), eventType: jsonString(event, "type"), ...rotated(matched) };
    },
  };
}
