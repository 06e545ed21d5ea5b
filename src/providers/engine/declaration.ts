/**
 * A provider as data: where its signature is, what it signs, with which algorithm, where its
 * delivery id and event type live, and which handshakes it needs. `defineProvider` (define.ts)
 * turns a declaration into a `Provider`; the crypto lives in one place per kind (schemes/).
 *
 * A newcomer adds a provider by copying a declaration from src/providers/catalogue/ and its test.
 */
import type { AcceptReply, HandshakeReply, SecurityGrade, SignedRequest, VerifyContext } from "../types";

/** Where a value comes from. `header` may name several spellings, the first present wins. */
export type ValueSpec =
  | { readonly header: string | readonly string[] }
  /** A dotted path into the JSON body (`data.object.id`); a number is read as its digits. */
  | { readonly json: string }
  | { readonly query: string }
  /** A field of a form-encoded body. */
  | { readonly form: string };

/**
 * What is signed, as a template: `{body}` the raw bytes (never re-encoded), `{timestamp}`, `{id}`
 * (the delivery id), `{url}` (the public URL called), `{method}`, `{header:Name}`, `{json:path}`,
 * `{query:name}`, `{form:name}`, `{setting:WHAT}` (a second value), `{crc32:body}` (decimal CRC-32
 * of the body), `{sha256:body}` (hex). A function for content no template can say (SNS's
 * canonical fields): null refuses the request.
 */
export type SignedContent = string | ((request: SignedRequest, parsed: unknown) => string | null);

/**
 * Numbered headers, one signature each: `<prefix>1`, `<prefix>2`, … up to `<prefix><max>` (DocuSign
 * sends `X-DocuSign-Signature-1..N`, one per HMAC key of the account, during a rotation several).
 */
export interface NumberedHeaders {
  readonly numberedHeaders: string;
  readonly max: number;
}

/** How a signature value is laid out in its field. */
export interface SignatureSpec {
  readonly from: ValueSpec | NumberedHeaders;
  /** Text before the value (`sha256=`, `v0=`); entries without it are ignored. */
  readonly prefix?: string;
  /** Splits several values (a rotation): `" "`, `","`. */
  readonly list?: string;
  /**
   * A keyed list such as `t=…,v1=…` (Stripe) or `ts=…;h1=…` (Paddle): the items' separator, the
   * key of the signatures (repeated during a rotation) and the key of the timestamp, if any.
   */
  readonly keyed?: { readonly items: string; readonly signature: string; readonly timestamp?: string };
  readonly encoding: "hex" | "base64" | "base64url";
}

/** Where the timestamp is (a value, or the keyed signature's timestamp), its unit, and the tolerance both ways. */
export interface TimestampSpec {
  readonly from: ValueSpec | "signature";
  readonly unit: "seconds" | "milliseconds" | "iso8601";
  /** Default 300. */
  readonly toleranceSeconds?: number;
}

export type HmacHash = "SHA-1" | "SHA-256" | "SHA-512";

export interface HmacScheme {
  readonly kind: "hmac";
  readonly hash: HmacHash;
  readonly signature: SignatureSpec;
  readonly signed: SignedContent;
  readonly timestamp?: TimestampSpec;
  /** How the secret becomes key bytes: as UTF-8 (default), hex- or base64-decoded, or a `whsec_` base64 key. */
  readonly key?: "utf8" | "hex" | "base64" | "whsec";
  /** HMAC covers the body only through a field of it (Adyen: selected fields; Mailgun: none). */
  readonly bodySigned?: boolean | "partly";
}

export type AsymmetricAlgorithm = "Ed25519" | "ECDSA-P256-SHA256" | "RSA-PKCS1-SHA256" | "RSA-PSS-SHA256";

/** A signature by a key pair: the public key is the source's secret (hex raw for Ed25519, else base64 SPKI or PEM). */
export interface AsymmetricScheme {
  readonly kind: "asymmetric";
  readonly algorithm: AsymmetricAlgorithm;
  readonly signature: SignatureSpec;
  readonly signed: SignedContent;
  readonly timestamp?: TimestampSpec;
}

/** A signature by a certificate fetched from a URL the request names: allow-listed hosts, https, cached, checked. */
export interface X509Scheme {
  readonly kind: "x509";
  readonly certUrl: ValueSpec;
  /** Hosts the certificate may come from (the whole host must match). */
  readonly allowedHosts: readonly RegExp[];
  readonly hash: (request: SignedRequest, parsed: unknown) => "SHA-1" | "SHA-256" | null;
  readonly signature: SignatureSpec;
  readonly signed: SignedContent;
  readonly timestamp?: TimestampSpec;
  /** What the source's secret must equal (SNS: the topic ARN; PayPal: the webhook id is signed instead). */
  readonly secretMatches?: ValueSpec;
}

/**
 * A verification key asked of the provider's API by its `kid` (Plaid's `/webhook_verification_key/get`),
 * authenticated with the source's secret: a POST to an allow-listed host, bounded by a timeout,
 * the key cached by `kid` (schemes/key-api.ts).
 */
export interface KeyApi {
  /** The endpoint, from the source's settings (Plaid: production or sandbox); null when a setting is wrong. */
  readonly url: (context: VerifyContext) => string | null;
  /** A setting that replaces the URL (tests: a local server, which passes only as a loopback test host). */
  readonly urlSetting?: string;
  readonly allowedHosts: readonly RegExp[];
  /** The JSON body that asks for `kid` with `secret` (and settings such as a client id); null when a setting is missing. */
  readonly request: (kid: string, secret: string, context: VerifyContext) => Record<string, unknown> | null;
  /** Where the JWK is in the answer (`key`). */
  readonly keyPath: string;
  /** A field of the JWK that, when set, says the key expired and must not verify anything (Plaid's `expired_at`). */
  readonly expiredField?: string;
}

/** A JSON Web Token: from a JWKS (allow-listed URL), a key API, or a shared key; its issuer, audience and body-hash claim. */
export interface JwtScheme {
  readonly kind: "jwt";
  readonly token: ValueSpec;
  /** Text before the token (`Bearer `). */
  readonly prefix?: string;
  readonly keys:
    | { readonly shared: true }
    | { readonly jwksUrl: string; readonly jwksSetting?: string; readonly allowedHosts: readonly RegExp[] }
    | { readonly keyApi: KeyApi };
  readonly algorithms: readonly string[];
  readonly issuer?: string | readonly string[];
  /** The audience: the source's secret (`"secret"`) or a setting's name. */
  readonly audience?: "secret" | { readonly setting: string };
  /** A claim holding the body's SHA-256 (hex): the token then signs the body too. */
  readonly bodyHashClaim?: string;
  /** A claim that must equal a setting (Pub/Sub's service account `email`). */
  readonly claimSetting?: { readonly claim: string; readonly setting: string };
  /** Tokens older than this (by `iat`) are refused; default: `exp` alone decides. */
  readonly maxAgeSeconds?: number;
}

/** The secret itself, sent in a header or as HTTP Basic; compared in constant time. */
export interface SharedSecretScheme {
  readonly kind: "shared-secret";
  /** A header (with a prefix such as `Bearer `), a body field (Graph's `clientState`), or HTTP Basic (`user:password`). */
  readonly from: { readonly header: string; readonly prefix?: string } | { readonly json: string } | "basic";
}

/** The secret in the URL's query: only where the provider offers nothing better. */
export interface UrlSecretScheme {
  readonly kind: "url-secret";
  readonly query: string;
}

export type Scheme = HmacScheme | AsymmetricScheme | X509Scheme | JwtScheme | SharedSecretScheme | UrlSecretScheme;

/**
 * The delivery id: a value, or, where the provider sends none, derived from fields of the signed
 * content (`derive`, JSON-encoded together, then SHA-256): say which fields in the declaration.
 * `per-request` gives every request an id of its own: for change pings that are identical by design
 * (Dropbox), where any content key would merge two real pings.
 */
export type IdSpec = ValueSpec | { readonly derive: readonly (ValueSpec | "body" | "timestamp")[] } | "per-request";

/** Events batched in one request: each is stored as its own delivery. */
export interface BatchSpec {
  /** The array: `""` when the body is the array, else a dotted path to it. */
  readonly path: string;
  /** Within each element, the object that is the event (Adyen's `NotificationRequestItem`). */
  readonly item?: string;
  readonly deliveryId: IdSpec;
  readonly eventType?: ValueSpec;
  /** Each event carries its own signature (Adyen) or secret (Graph's clientState): every one must verify. */
  readonly verifyEach?: boolean;
}

/** What a handshake sees: the request, its parsed body, the source's settings and verified state. */
export interface HandshakeInput {
  readonly request: SignedRequest;
  readonly parsed: unknown;
  readonly context: VerifyContext;
  readonly secrets: readonly string[];
  /** The secret that verified the request (0 before verification). */
  readonly matchedSecret: number;
}

/** A handshake: a reply for requests that are not events, or null. */
export type Handshake = (input: HandshakeInput) => Promise<HandshakeReply | null> | HandshakeReply | null;

/** A lifecycle message (not an event): what kind it is, or null. */
export type Lifecycle = (input: HandshakeInput) => { kind: string; detail: string } | null;

export interface ProviderDeclaration {
  /** The scheme's name, for logs and docs. */
  readonly name: string;
  /** The provider's documentation of its signature. */
  readonly docs: string;
  readonly scheme: Scheme;
  /** The delivery id; for a batch, each event's (`batch.deliveryId`) instead. */
  readonly deliveryId?: IdSpec;
  /** A value, or read off the parsed body where one field cannot say it (Discord: an event's type, or the interaction's kind). */
  readonly eventType?: ValueSpec | ((parsed: unknown) => string | null);
  /** The dedup key in words (for the docs table): `body id`, `X-Request-UUID + content digest`, … */
  readonly dedupKey: string;
  /** Handshakes answered before verification, for requests that carry no signature (Meta's GET, Graph's validationToken). */
  readonly unsignedHandshakes?: readonly Handshake[];
  /** Handshakes answered once the request verified (Slack, Twitch, Zoom, SNS, Discord). */
  readonly handshakes?: readonly Handshake[];
  readonly lifecycle?: Lifecycle;
  readonly batch?: BatchSpec;
  /** Methods besides POST (GET handshakes). */
  readonly methods?: readonly string[];
  /** Headers carrying a credential, never stored (the token of a shared-secret scheme is added by itself). */
  readonly credentialHeaders?: readonly string[];
  /**
   * The answer to every accepted delivery: fixed (Adyen `[accepted]`), or read off the verified
   * request (Discord answers an interaction with a deferred response, a webhook event with 204).
   */
  readonly acceptReply?: AcceptReply | ((input: HandshakeInput) => AcceptReply);
  /**
   * What the grade cannot read off a template given as a function (SNS's canonical fields cover
   * its `MessageId`): set here, and said why in the declaration.
   */
  readonly gradeOverride?: Partial<SecurityGrade>;
  /**
   * Deduplicate on the signed content's digest too. Default: on when the delivery id is not signed
   * (a captured request resent under a fresh id is then a duplicate), off otherwise.
   */
  readonly dedupeOnContent?: boolean;
}
