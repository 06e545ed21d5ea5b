/**
 * Twilio (https://www.twilio.com/docs/usage/webhooks/webhooks-security).
 *
 * `X-Twilio-Signature` is the base64 HMAC-SHA1, keyed with the Auth Token, of the full URL Twilio
 * called followed by every POST parameter as `name+value`, sorted by name (a repeated name's
 * values deduplicated and sorted), with no separators. A JSON body is not signed as parameters:
 * Twilio appends `bodySHA256=<hex SHA-256 of the body>` to the URL and signs the URL alone, so the
 * hash must also match the body. As twilio-node does, the URL is tried with and without its
 * port, because Twilio's own signing is inconsistent there. Nothing time-related is signed.
 * The delivery id is `I-Twilio-Idempotency-Token`, kept across Twilio's retries; without it, the
 * hex digest of the signed content (identical retries then count as duplicates). The token is not
 * signed: a replay under a fresh token is caught by the digest of the signed content
 * (`dedupeOnContent`). That digest is taken over what the signature covers, canonically, not over
 * the raw bytes: the URL without its port and the parameters as decoded and sorted. Otherwise the
 * same captured request with its parameters reordered or re-encoded (`+` for `%20`), which still
 * verifies, would be new bytes and slip past as a new delivery.
 */
import { fromBase64, MAX_SIGNATURE_HEADER_LENGTH, matchingSecret, rotated, sha256, timingSafeEqualText, toHex } from "./crypto";

const encoder = new TextEncoder();
import { refuse, type ContentDedupOptions, type Provider, type SignedRequest, type Verification } from "./types";

/** The raw URL split around its port, so the variants are built without re-encoding anything. */
const URL_PARTS = /^(https?:\/\/)((?:[^/?#@]*@)?(?:\[[^\]/?#]*\]|[^/?#:]*))(?::(\d*))?([/?#].*)?$/i;

/** `url` without its port. */
function withoutPort(url: string): string {
  const match = URL_PARTS.exec(url);
  if (!match) return url;
  const [, scheme = "", authority = "", , rest = ""] = match;
  return `${scheme}${authority}${rest}`;
}

/** `url` as given, without its port, and with the scheme's default port (twilio-node's three tries). */
function urlVariants(url: string): string[] {
  const match = URL_PARTS.exec(url);
  if (!match) return [url];
  const [, scheme = "", authority = "", port, rest = ""] = match;
  const defaultPort = scheme.toLowerCase() === "https://" ? "443" : "80";
  return [...new Set([url, withoutPort(url), `${scheme}${authority}:${port || defaultPort}${rest}`])];
}

/** Form parameters as Twilio signs them: sorted names, each name's distinct values sorted. */
function sortedParameters(form: URLSearchParams): [string, string][] {
  const byName = new Map<string, Set<string>>();
  for (const [name, value] of form) byName.set(name, (byName.get(name) ?? new Set()).add(value));
  return [...byName.keys()].sort().flatMap((name) => [...byName.get(name)!].sort().map((value): [string, string] => [name, value]));
}

/**
 * SHA-256 of the signed content in one unambiguous encoding (JSON, never joined text, so that no two
 * different requests collide): the URL without its port (the signature accepts either), and the
 * parameters as decoded and sorted, or the body's own SHA-256 when a `bodySHA256` URL signs it.
 */
function canonicalDigest(url: string, parameters: [string, string][], bodyHash: string | null): Promise<Uint8Array> {
  return sha256(encoder.encode(JSON.stringify(["twilio", withoutPort(url), parameters, bodyHash])));
}

/**
 * A Twilio verifier. Behind a proxy or custom domain, set `PUBLIC_BASE_URL` to the origin
 * configured in Twilio, since the URL is part of what is signed.
 * @example
 * const sources = { twilio: twilio() };
 * // Phone number → Messaging → "A message comes in": https://inbox.example.com/webhooks/twilio
 */
export function twilio(options: ContentDedupOptions = {}): Provider {
  const dedupeOnContent = options.dedupeOnContent ?? true;
  return {
    kind: "twilio",
    grade: { bodySigned: true, timestampSigned: false, deliveryIdSigned: false, secretInClear: false },
    dedupKey: "`I-Twilio-Idempotency-Token` (not signed) and the digest of the canonical signed content (URL, sorted parameters)",
    signsDeliveryId: false,
    async verify(request: SignedRequest, secrets: readonly string[]): Promise<Verification> {
      const header = request.headers.get("x-twilio-signature");
      if (!header) return refuse("missing X-Twilio-Signature header");
      if (header.length > MAX_SIGNATURE_HEADER_LENGTH) return refuse("signature header too long");
      const signature = fromBase64(header.trim());
      if (signature?.length !== 20) return refuse("X-Twilio-Signature is not a base64 SHA-1 digest");
      const bodyHash = toHex(await sha256(request.body));
      const signedBodyHash = URL.canParse(request.url) ? new URL(request.url).searchParams.get("bodySHA256") : null;
      let parameters: [string, string][] = [];
      if (signedBodyHash !== null) {
        if (!timingSafeEqualText(signedBodyHash.toLowerCase(), bodyHash)) return refuse("bodySHA256 does not match the body");
      } else if (isForm(request.headers.get("content-type"))) {
        parameters = sortedParameters(new URLSearchParams(new TextDecoder().decode(request.body)));
      } else if (request.body.length > 0) {
        // Only form parameters or a bodySHA256 put the body under the signature.
        return refuse("a body that is not a form needs a bodySHA256 URL parameter");
      }
      const signedText = parameters.map(([name, value]) => name + value).join("");
      let matched = -1;
      for (const url of urlVariants(request.url)) {
        const index = await matchingSecret("SHA-1", secrets, [signature], [url, signedText]);
        if (index >= 0 && (matched < 0 || index < matched)) matched = index;
      }
      if (matched < 0) return refuse("signature mismatch");
      const digest = await canonicalDigest(request.url, parameters, signedBodyHash === null ? null : bodyHash);
      return {
        ok: true,
        ...rotated(matched),
        deliveryId: request.headers.get("i-twilio-idempotency-token") || toHex(digest),
        eventType: null,
        ...(dedupeOnContent ? { contentDigest: digest } : {}),
      };
    },
  };
}

function isForm(contentType: string | null): boolean {
  return contentType?.split(";")[0]?.trim().toLowerCase() === "application/x-www-form-urlencoded";
}
