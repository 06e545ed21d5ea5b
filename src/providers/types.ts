/**
 * The one interface every provider implements.
 *
 * A provider knows how its deliveries are signed and where the delivery id and event type live.
 * It knows nothing of D1, queues or HTTP responses: it gets the raw request and the configured
 * secrets, and returns a result. A bad signature is a result (`ok: false`), never an exception;
 * only misconfiguration throws.
 *
 * Some providers (GitHub, Shopify, GitLab, Twilio) carry the delivery id in a header that the
 * signature does not cover, and sign no timestamp: whoever holds one signed request can resend it
 * under a fresh id. Those providers also return a digest of the signed content, and the store
 * refuses a second delivery with the same digest as a duplicate, whatever its id.
 */

import { concat, sha256 } from "./crypto";

/** What a provider sees of an incoming request. */
export interface SignedRequest {
  /** The public URL the provider called (Twilio signs it). */
  readonly url: string;
  readonly headers: Headers;
  /** The raw body bytes, exactly as received: what was signed is what is verified and stored. */
  readonly body: Uint8Array;
}

/** A verified delivery, or why it was refused. */
export type Verification =
  | {
      readonly ok: true;
      /** The provider's id for this delivery, stable across its retries; null when absent. */
      readonly deliveryId: string | null;
      readonly eventType: string | null;
      /**
       * SHA-256 of the signed content, when the delivery id is not signed and the source
       * deduplicates on content: a stored delivery with the same digest makes this a duplicate.
       */
      readonly contentDigest?: Uint8Array;
      /**
       * A handshake the provider expects answered instead of a stored delivery (Slack's
       * `url_verification`): the receiver replies with this JSON and stores nothing.
       */
      readonly handshake?: Record<string, unknown>;
    }
  | { readonly ok: false; readonly reason: string };

/** Verifies a provider's signature and identifies its deliveries. */
export interface Provider {
  /** The scheme's name, for logs and docs (`stripe`, `standard-webhooks`, …). */
  readonly kind: string;
  /**
   * Whether the signature covers the delivery id (Stripe's is in the signed body; GitHub's is a
   * header nobody signs). When it does not, a replay under a new id is caught by content instead.
   */
  readonly signsDeliveryId: boolean;
  /**
   * Request headers that carry a credential of this provider (lower case), e.g. GitLab's
   * `x-gitlab-token`, which is the secret itself: never stored with the delivery (beside the
   * standard ones, store/headers.ts).
   */
  readonly credentialHeaders?: readonly string[];
  /**
   * Verifies `request` against every secret (any one may match: rotation) at `nowSeconds`.
   * Never throws for bad input: a malformed header is `{ ok: false }`.
   */
  verify(request: SignedRequest, secrets: readonly string[], nowSeconds: number): Promise<Verification>;
}

/**
 * Thrown by a provider whose secret cannot be used (e.g. a Standard Webhooks secret that is not
 * base64): the receiver answers 503 so the provider retries once the secret is fixed.
 */
export class MisconfiguredSecretError extends Error {
  override readonly name = "MisconfiguredSecretError";
}

/** The option of every provider whose delivery id is not signed. */
export interface ContentDedupOptions {
  /**
   * Also count a delivery as a duplicate when its signed content (the body) was already stored,
   * under any id, within the retention period. Default true: otherwise a captured request resent
   * with a fresh id header is processed again. The cost: two genuinely separate deliveries with
   * byte-identical bodies are stored once. Switch it off for a sender that does that on purpose.
   */
  readonly dedupeOnContent?: boolean;
}

/** SHA-256 of `parts` (the signed content) when `enabled`, for `Verification.contentDigest`. */
export async function contentDigest(enabled: boolean, ...parts: (string | Uint8Array)[]): Promise<{ contentDigest?: Uint8Array }> {
  return enabled ? { contentDigest: await sha256(concat(parts)) } : {};
}

/** Shorthand for a refusal. */
export function refuse(reason: string): Verification {
  return { ok: false, reason };
}
