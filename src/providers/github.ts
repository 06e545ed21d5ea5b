/**
 * GitHub (https://docs.github.com/webhooks/using-webhooks/validating-webhook-deliveries).
 *
 * `X-Hub-Signature-256: sha256=<hex>`, HMAC-SHA256 of the raw body with the hook's secret. No
 * timestamp is signed, so there is no replay window. `X-GitHub-Delivery` is a GUID that GitHub
 * keeps when a delivery is redelivered, but the signature does not cover it: a replay under a
 * fresh GUID is caught by the body's digest instead (`dedupeOnContent`). `X-GitHub-Event` is the
 * event name (`push`, `ping`, …). The legacy SHA-1
 * `X-Hub-Signature` is ignored on purpose: GitHub always sends the SHA-256 one as well.
 */
import { fromHex, MAX_SIGNATURE_HEADER_LENGTH, matchingSecret, rotated } from "./crypto";
import { contentDigest, refuse, type ContentDedupOptions, type Provider, type SignedRequest, type Verification } from "./types";

const SIGNATURE_PREFIX = "sha256=";

/**
 * A GitHub verifier (repository, organisation and GitHub App webhooks alike).
 * @example
 * const sources = { github: github() };
 * // wrangler secret put GITHUB_WEBHOOK_SECRET  (the "Secret" field of the webhook)
 * const lenient = github({ dedupeOnContent: false }); // identical bodies under two GUIDs: two deliveries
 */
export function github(options: ContentDedupOptions = {}): Provider {
  const dedupeOnContent = options.dedupeOnContent ?? true;
  return {
    kind: "github",
    grade: { bodySigned: true, timestampSigned: false, deliveryIdSigned: false, secretInClear: false },
    dedupKey: "`X-GitHub-Delivery` (kept on redelivery, not signed) and the body's digest",
    signsDeliveryId: false,
    async verify(request: SignedRequest, secrets: readonly string[]): Promise<Verification> {
      const header = request.headers.get("x-hub-signature-256");
      if (!header) return refuse("missing X-Hub-Signature-256 header");
      if (header.length > MAX_SIGNATURE_HEADER_LENGTH) return refuse("signature header too long");
      if (!header.startsWith(SIGNATURE_PREFIX)) return refuse("X-Hub-Signature-256 does not start with sha256=");
      const signature = fromHex(header.slice(SIGNATURE_PREFIX.length));
      if (signature?.length !== 32) return refuse("X-Hub-Signature-256 is not a SHA-256 hex digest");
      const matched = await matchingSecret("SHA-256", secrets, [signature], [request.body]);
      if (matched < 0) return refuse("signature mismatch");
      return {
        ok: true,
        ...rotated(matched),
        deliveryId: request.headers.get("x-github-delivery"),
        eventType: request.headers.get("x-github-event"),
        ...(await contentDigest(dedupeOnContent, request.body)),
      };
    },
  };
}
