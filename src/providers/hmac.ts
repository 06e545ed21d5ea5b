/**
 * A generic HMAC source, for providers without a verifier of their own: declare the header, the
 * algorithm and encoding, what is signed and where the delivery id lives, in a few lines of
 * config (src/sources.ts). The secret is used as UTF-8 bytes.
 *
 * The signed content is a template: `{body}` stands for the raw body bytes (spliced in untouched,
 * never decoded and re-encoded), `{timestamp}` for the timestamp header's value. A template is
 * checked when the source is declared, so a typo fails at startup rather than accepting deliveries
 * whose body nobody signed.
 *
 * An id read from a header is not signed: such a source also deduplicates on the digest of the
 * signed content (`dedupeOnContent`, default on), so a replay under a fresh id is a duplicate.
 */
import { checkTimestamp, fromBase64, fromHex, jsonString, MAX_SIGNATURE_HEADER_LENGTH, matchingSecret, parseJson, rotated, sha256, toHex, type HashName } from "./crypto";
import { contentDigest, refuse, type ContentDedupOptions, type Provider, type SignedRequest, type Verification } from "./types";

/** Where a value comes from: a request header, or a dotted path into a JSON body. */
export type ValueSource = { readonly header: string } | { readonly jsonPath: string };

export interface HmacOptions extends ContentDedupOptions {
  /** The header carrying the signature, e.g. `X-Signature`. */
  readonly header: string;
  /** Text before the digest, e.g. `sha256=`. Entries without it are ignored (other schemes). */
  readonly prefix?: string;
  /** Splits a header carrying several signatures (rotation), e.g. `" "` or `","`. Default: one signature. */
  readonly separator?: string;
  /** Default `SHA-256`. */
  readonly algorithm?: HashName;
  /** Headers the sender puts a credential in (e.g. an API key next to the signature): never stored. */
  readonly credentialHeaders?: readonly string[];
  /** Default `hex`. */
  readonly encoding?: "hex" | "base64";
  /** A header with the unix-seconds timestamp that the template signs as `{timestamp}`. */
  readonly timestampHeader?: string;
  /** Allowed clock difference, past and future, when a timestamp is signed. Default 300 s. */
  readonly toleranceSeconds?: number;
  /** What is signed. Default `{body}`, or `{timestamp}.{body}` with a `timestampHeader`. */
  readonly signedContent?: string;
  /**
   * The delivery id, stable across the provider's retries; `body-sha256` when it has none. A
   * header id is not signed, so `dedupeOnContent` defaults to on for it (off for the others).
   */
  readonly deliveryId: ValueSource | "body-sha256";
  readonly eventType?: ValueSource;
}

const PLACEHOLDER = /\{([A-Za-z_]+)\}/g;
const DIGEST_BYTES: Record<HashName, number> = { "SHA-256": 32, "SHA-1": 20, "SHA-512": 64 };

/** The template as literal text and `{body}`/`{timestamp}` markers; throws for a template that signs no body. */
function compileTemplate(template: string, hasTimestamp: boolean): (string | "{body}" | "{timestamp}")[] {
  const names = [...template.matchAll(PLACEHOLDER)].map((match) => match[1]);
  const unknown = names.filter((name) => name !== "body" && name !== "timestamp");
  if (unknown.length > 0) throw new TypeError(`hmac(): unknown placeholder {${unknown[0]}} in signedContent`);
  if (names.filter((name) => name === "body").length !== 1) throw new TypeError("hmac(): signedContent must contain {body} once");
  if (names.includes("timestamp") !== hasTimestamp) {
    throw new TypeError("hmac(): a timestampHeader and a {timestamp} in signedContent go together");
  }
  return template.split(/(\{body\}|\{timestamp\})/).filter((part) => part !== "") as (string | "{body}" | "{timestamp}")[];
}

function read(source: ValueSource, request: SignedRequest, json: () => unknown): string | null {
  return "header" in source ? request.headers.get(source.header) : jsonString(json(), source.jsonPath);
}

/**
 * A generic HMAC verifier.
 * @example
 * // Signature: `X-Acme-Signature: sha256=<hex>` over `{timestamp}.{body}`, id in the body's `event.id`.
 * const acme = hmac({
 *   header: "X-Acme-Signature", prefix: "sha256=", timestampHeader: "X-Acme-Timestamp",
 *   signedContent: "{timestamp}.{body}", deliveryId: { jsonPath: "event.id" }, eventType: { header: "X-Acme-Event" },
 * });
 */
export function hmac(options: HmacOptions): Provider {
  const algorithm = options.algorithm ?? "SHA-256";
  const decode = options.encoding === "base64" ? fromBase64 : fromHex;
  const prefix = options.prefix ?? "";
  const tolerance = options.toleranceSeconds ?? 300;
  const template = compileTemplate(options.signedContent ?? (options.timestampHeader ? "{timestamp}.{body}" : "{body}"), !!options.timestampHeader);
  const signsDeliveryId = options.deliveryId === "body-sha256" || "jsonPath" in options.deliveryId;
  const dedupeOnContent = options.dedupeOnContent ?? !signsDeliveryId;
  return {
    kind: "hmac",
    grade: { bodySigned: true, timestampSigned: !!options.timestampHeader, deliveryIdSigned: signsDeliveryId, secretInClear: false },
    dedupKey: options.deliveryId === "body-sha256" ? "SHA-256 of the body" : "header" in options.deliveryId ? `\`${options.deliveryId.header}\` (not signed) and the signed content's digest` : `body \`${options.deliveryId.jsonPath}\` (signed)`,
    signsDeliveryId,
    credentialHeaders: (options.credentialHeaders ?? []).map((name) => name.toLowerCase()),
    async verify(request: SignedRequest, secrets: readonly string[], nowSeconds: number): Promise<Verification> {
      const header = request.headers.get(options.header);
      if (!header) return refuse(`missing ${options.header} header`);
      if (header.length > MAX_SIGNATURE_HEADER_LENGTH) return refuse("signature header too long");
      let timestamp = "";
      if (options.timestampHeader) {
        timestamp = request.headers.get(options.timestampHeader)?.trim() ?? "";
        const stale = checkTimestamp(timestamp, nowSeconds, tolerance);
        if (stale) return refuse(stale);
      }
      const entries = options.separator ? header.split(options.separator) : [header];
      const signatures = entries
        .map((entry) => entry.trim())
        .filter((entry) => entry.startsWith(prefix))
        .map((entry) => decode(entry.slice(prefix.length)))
        .filter((decoded): decoded is Uint8Array => decoded?.length === DIGEST_BYTES[algorithm]);
      if (signatures.length === 0) return refuse(`no well-formed signature in ${options.header}`);
      const parts = template.map((part) => (part === "{body}" ? request.body : part === "{timestamp}" ? timestamp : part));
      const matched = await matchingSecret(algorithm, secrets, signatures, parts);
      if (matched < 0) return refuse("signature mismatch");
      let parsed: unknown;
      const json = () => (parsed ??= parseJson(request.body));
      return {
        ok: true,
        ...rotated(matched),
        deliveryId: options.deliveryId === "body-sha256" ? toHex(await sha256(request.body)) : read(options.deliveryId, request, json),
        eventType: options.eventType ? read(options.eventType, request, json) : null,
        // The whole signed content: with a signed timestamp, a provider's new attempt differs.
        ...(await contentDigest(dedupeOnContent, ...parts)),
      };
    },
  };
}
