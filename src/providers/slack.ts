/**
 * Slack Events API (https://api.slack.com/authentication/verifying-requests-from-slack).
 *
 * `X-Slack-Signature: v0=<hex>` over `v0:{X-Slack-Request-Timestamp}:{raw body}`, HMAC-SHA256
 * with the app's signing secret. The delivery id is the envelope's `event_id`, which Slack keeps
 * on its retries (`X-Slack-Retry-Num`). When an Events URL is saved, Slack sends a
 * `url_verification` request; it is answered with its `challenge` once the signature checks out,
 * and nothing is stored.
 */
import { checkTimestamp, fromHex, jsonString, MAX_SIGNATURE_HEADER_LENGTH, matchingSecret, parseJson, rotated } from "./crypto";
import { refuse, type Provider, type SignedRequest, type Verification } from "./types";

export interface SlackOptions {
  /** Allowed clock difference, past and future. Default 300 s, as Slack's own SDKs (which check the past only). */
  readonly toleranceSeconds?: number;
}

const SIGNATURE_PREFIX = "v0=";

/**
 * A Slack Events API verifier.
 * @example
 * const sources = { slack: slack() };
 * // Event Subscriptions → Request URL: https://inbox.example.com/webhooks/slack
 */
export function slack(options: SlackOptions = {}): Provider {
  const tolerance = options.toleranceSeconds ?? 300;
  return {
    kind: "slack",
    grade: { bodySigned: true, timestampSigned: true, deliveryIdSigned: true, secretInClear: false },
    dedupKey: "body `event_id` (signed)",
    signsDeliveryId: true,
    async verify(request: SignedRequest, secrets: readonly string[], nowSeconds: number): Promise<Verification> {
      const header = request.headers.get("x-slack-signature");
      const timestamp = request.headers.get("x-slack-request-timestamp");
      if (!header) return refuse("missing X-Slack-Signature header");
      if (header.length > MAX_SIGNATURE_HEADER_LENGTH) return refuse("signature header too long");
      const stale = checkTimestamp(timestamp, nowSeconds, tolerance);
      if (stale) return refuse(stale);
      if (!header.startsWith(SIGNATURE_PREFIX)) return refuse("X-Slack-Signature does not start with v0=");
      const signature = fromHex(header.slice(SIGNATURE_PREFIX.length));
      if (signature?.length !== 32) return refuse("X-Slack-Signature is not a SHA-256 hex digest");
      const matched = await matchingSecret("SHA-256", secrets, [signature], [`v0:${timestamp}:`, request.body]);
      if (matched < 0) {
        return refuse("signature mismatch");
      }
      const envelope = parseJson(request.body);
      if (jsonString(envelope, "type") === "url_verification") {
        const challenge = jsonString(envelope, "challenge");
        if (challenge === null) return refuse("url_verification without a challenge");
        // Answered as Slack documents it: the challenge echoed in a JSON object.
        const handshake = { name: "url_verification", status: 200, contentType: "application/json", body: JSON.stringify({ challenge }) };
        return { ok: true, deliveryId: null, eventType: "url_verification", handshake };
      }
      return {
        ok: true,
        ...rotated(matched),
        deliveryId: jsonString(envelope, "event_id"),
        // The inner event's type (`app_mention`, …) says more than the envelope's `event_callback`.
        eventType: jsonString(envelope, "event.type") ?? jsonString(envelope, "type"),
      };
    },
  };
}
