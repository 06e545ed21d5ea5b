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

/** A fixed answer to an accepted delivery: status, content type, body (Adyen's `[accepted]`, Discord's 204). */
export type AcceptReply = Omit<HandshakeReply, "name" | "followUp">;

/** What a provider sees of an incoming request. */
export interface SignedRequest {
  /** The public URL the provider called (Twilio signs it). */
  readonly url: string;
  /** `POST`, or `GET` for a provider whose handshake is a GET (Meta, Dropbox). Absent means POST. */
  readonly method?: string;
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
       * `url_verification`, Twitch's challenge, Meta's GET, SNS's subscription): the receiver
       * replies exactly as described, runs its follow-up, and stores no delivery.
       */
      readonly handshake?: HandshakeReply;
      /**
       * A provider's message about the subscription itself, not an event (Twitch `revocation`,
       * Graph `reauthorizationRequired`, SNS `UnsubscribeConfirmation`): answered, logged and
       * counted apart, never run through a handler.
       */
      readonly lifecycle?: { readonly kind: string; readonly detail: string };
      /**
       * Several events in one request (SendGrid, HubSpot, Event Grid, Adyen): each is its own
       * delivery, with its own id and, as its body, its own bytes cut from the signed body.
       */
      readonly events?: readonly BatchEvent[];
      /** Which configured secret verified it: 0 the current one, 1 the previous one (a rotation). */
      readonly matchedSecret?: number;
      /**
       * The answer to this delivery once stored (or a duplicate), when it depends on the request
       * (Discord: a deferred interaction response for a command, a 204 for a webhook event);
       * otherwise the provider's fixed `acceptReply`, else the JSON status.
       */
      readonly acceptReply?: AcceptReply;
    }
  | { readonly ok: false; readonly reason: string };

/** One event of a batch: its id, its type, its exact bytes within the request body. */
export interface BatchEvent {
  readonly deliveryId: string | null;
  readonly eventType: string | null;
  readonly body: Uint8Array;
  /** SHA-256 of the event's bytes, when its id is not signed. */
  readonly contentDigest?: Uint8Array;
}

/** An outbound step a handshake needs, run by the receiver before it answers (SNS's SubscribeURL). */
export interface FollowUp {
  readonly kind: "confirm-subscription";
  /** An https URL on a host the provider's declaration allows (checked again before the fetch). */
  readonly url: string;
  readonly allowedHosts: readonly RegExp[];
}

/** The exact answer a handshake needs: status, content type, body and headers, and a follow-up. */
export interface HandshakeReply {
  readonly name: string;
  readonly status: number;
  readonly contentType?: string;
  readonly body: string;
  readonly headers?: Readonly<Record<string, string>>;
  readonly followUp?: FollowUp;
}

/** What a source's verifier may read besides its secrets: its second values, outbound fetches. */
export interface VerifyContext {
  /** A source's second value, `<NAME>_WEBHOOK_<WHAT>` (e.g. `VERIFY_TOKEN`), or undefined when unset. */
  setting(what: string): string | undefined;
  /** Hosts a test may allow besides a declaration's own (loopback only; see src/providers/engine/outbound.ts). */
  readonly testHosts: readonly string[];
}

/** What a source's security amounts to: shown in the docs table, the admin API and the dashboard. */
export interface SecurityGrade {
  readonly bodySigned: boolean | "partly";
  readonly timestampSigned: boolean;
  readonly deliveryIdSigned: boolean;
  /** The secret travels in every request (a token header, Basic auth, a URL query). */
  readonly secretInClear: boolean;
}

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
  /** Methods besides POST the provider uses (Meta's and Dropbox's GET handshakes). */
  readonly methods?: readonly string[];
  /** Where the source stands (see SecurityGrade); absent for a hand-written provider that says nothing. */
  readonly grade?: SecurityGrade;
  /** What the dedup key is, in words, for the docs and the dashboard. */
  readonly dedupKey?: string;
  /** The answer to a stored or duplicate delivery when the provider needs a fixed one (Adyen's `[accepted]`). */
  readonly acceptReply?: AcceptReply;
  /**
   * Verifies `request` against every secret (any one may match: rotation) at `nowSeconds`.
   * Never throws for bad input: a malformed header is `{ ok: false }`.
   */
  verify(request: SignedRequest, secrets: readonly string[], nowSeconds: number, context?: VerifyContext): Promise<Verification>;
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
