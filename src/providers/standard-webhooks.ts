/**
 * Standard Webhooks (https://www.standardwebhooks.com) and Svix, which is the same scheme under
 * `svix-*` header names.
 *
 * Signed content: `{id}.{timestamp}.{raw body}`, HMAC-SHA256, base64. The key is the base64
 * decoding of the secret after its `whsec_` prefix. The signature header is a space-separated
 * list of `v1,<base64>` entries (several during a key rotation); other versions (`v1a`
 * asymmetric, `v2`, …) are ignored. The delivery id is the `*-id` header, which stays the same
 * across retries.
 */
import { checkTimestamp, fromBase64, hmac, MAX_SIGNATURE_HEADER_LENGTH, parseJson, jsonString, rotated, timingSafeEqual } from "./crypto";
import { MisconfiguredSecretError, refuse, type Provider, type SignedRequest, type Verification } from "./types";

export interface StandardWebhooksOptions {
  /** `webhook` (Standard Webhooks) or `svix`: the headers are `<prefix>-id`, `-timestamp`, `-signature`. */
  readonly headerPrefix?: "webhook" | "svix";
  /** Allowed clock difference, past and future. Default 300 s, as the reference libraries. */
  readonly toleranceSeconds?: number;
}

const SECRET_PREFIX = "whsec_";

/** Decodes a `whsec_…` secret to key bytes; throws for a secret that cannot be a key (misconfiguration). */
export function standardWebhooksKey(secret: string): Uint8Array {
  const encoded = secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret;
  const key = fromBase64(encoded);
  if (!key || key.length === 0) throw new MisconfiguredSecretError("a Standard Webhooks secret must be base64 after its whsec_ prefix");
  return key;
}

/** The `v1` signatures in a signature header, decoded; unknown versions and malformed entries dropped. */
function v1Signatures(header: string): Uint8Array[] {
  const signatures: Uint8Array[] = [];
  for (const entry of header.split(" ")) {
    const [version, value] = entry.split(",", 2);
    if (version !== "v1" || !value) continue;
    const decoded = fromBase64(value);
    if (decoded) signatures.push(decoded);
  }
  return signatures;
}

/**
 * A Standard Webhooks (or Svix) verifier.
 * @example
 * const sources = { billing: standardWebhooks(), payments: standardWebhooks({ headerPrefix: "svix" }) };
 */
export function standardWebhooks(options: StandardWebhooksOptions = {}): Provider {
  const prefix = options.headerPrefix ?? "webhook";
  const tolerance = options.toleranceSeconds ?? 300;
  return {
    kind: prefix === "svix" ? "svix" : "standard-webhooks",
    grade: { bodySigned: true, timestampSigned: true, deliveryIdSigned: true, secretInClear: false },
    dedupKey: `\`${prefix}-id\` (signed)`,
    signsDeliveryId: true,
    async verify(request: SignedRequest, secrets: readonly string[], nowSeconds: number): Promise<Verification> {
      const id = request.headers.get(`${prefix}-id`);
      const timestamp = request.headers.get(`${prefix}-timestamp`);
      const header = request.headers.get(`${prefix}-signature`);
      if (!id || !header) return refuse(`missing ${prefix}-id or ${prefix}-signature header`);
      if (header.length > MAX_SIGNATURE_HEADER_LENGTH) return refuse("signature header too long");
      const stale = checkTimestamp(timestamp, nowSeconds, tolerance);
      if (stale) return refuse(stale);
      const candidates = v1Signatures(header);
      if (candidates.length === 0) return refuse("no v1 signature");
      for (const [index, secret] of secrets.entries()) {
        const expected = await hmac("SHA-256", standardWebhooksKey(secret), `${id}.${timestamp}.`, request.body);
        if (candidates.some((candidate) => timingSafeEqual(candidate, expected))) {
          return { ok: true, deliveryId: id, eventType: jsonString(parseJson(request.body), "type"), ...rotated(index) };
        }
      }
      return refuse("signature mismatch");
    },
  };
}
