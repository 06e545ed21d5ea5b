/**
 * GitLab (https://docs.gitlab.com/user/project/integrations/webhooks/).
 *
 * GitLab signs nothing: `X-Gitlab-Token` carries the configured secret token itself, so the check
 * is a constant-time equality. Both sides are hashed first, so that even the secret's length does
 * not leak through timing. The delivery id is `Idempotency-Key` (GitLab 17.4+, kept across
 * retries); older GitLab only sends `X-Gitlab-Event-UUID`. `X-Gitlab-Event` is the event type.
 * Whoever holds one request can resend it under a fresh id: the body's digest catches that
 * (`dedupeOnContent`).
 */
import { MAX_SIGNATURE_HEADER_LENGTH, firstHeader, rotated, sha256, timingSafeEqual } from "./crypto";
import { contentDigest, refuse, type ContentDedupOptions, type Provider, type SignedRequest, type Verification } from "./types";

const encoder = new TextEncoder();

/**
 * A GitLab webhook verifier.
 * @example
 * const sources = { gitlab: gitlab() };
 * // Settings → Webhooks → Secret token: the value of GITLAB_WEBHOOK_SECRET
 */
export function gitlab(options: ContentDedupOptions = {}): Provider {
  const dedupeOnContent = options.dedupeOnContent ?? true;
  return {
    kind: "gitlab",
    grade: { bodySigned: false, timestampSigned: false, deliveryIdSigned: false, secretInClear: true },
    dedupKey: "`Idempotency-Key` (or `X-Gitlab-Event-UUID`; not signed) and the body's digest",
    signsDeliveryId: false,
    // The token is the secret: the dashboard must never show it.
    credentialHeaders: ["x-gitlab-token"],
    async verify(request: SignedRequest, secrets: readonly string[]): Promise<Verification> {
      const token = request.headers.get("x-gitlab-token");
      if (!token) return refuse("missing X-Gitlab-Token header");
      if (token.length > MAX_SIGNATURE_HEADER_LENGTH) return refuse("token header too long");
      const received = await sha256(encoder.encode(token));
      let matched = -1;
      for (const [index, secret] of secrets.entries()) {
        if (timingSafeEqual(received, await sha256(encoder.encode(secret))) && matched < 0) matched = index;
      }
      if (matched < 0) return refuse("token mismatch");
      return {
        ok: true,
        ...rotated(matched),
        deliveryId: firstHeader(request.headers, "idempotency-key", "x-gitlab-event-uuid"),
        eventType: request.headers.get("x-gitlab-event"),
        ...(await contentDigest(dedupeOnContent, request.body)),
      };
    },
  };
}
