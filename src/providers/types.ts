/**
 * The one interface every provider implements.
 *
 * A provider knows how its deliveries are signed and where the delivery id and event type live.
 * It knows nothing of D1, queues or HTTP responses: it gets the raw request and the configured
 * secrets, and returns a result. A bad signature is a result (`ok: false`), never an exception;
 * only misconfiguration throws.
 */

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

/** Shorthand for a refusal. */
export function refuse(reason: string): Verification {
  return { ok: false, reason };
}
