/**
 * Payment providers as declarations (engine: src/providers/engine). Stripe has a file of its own
 * (src/providers/stripe.ts). Each declaration names its documentation.
 */
import { jsonString } from "../crypto";
import { defineProvider } from "../engine/define";

/** Square: base64 HMAC-SHA256 of the notification URL followed by the body; `event_id` in the body. */
export const square = () =>
  defineProvider({
    name: "square",
    docs: "https://developer.squareup.com/docs/webhooks/step3validate",
    scheme: { kind: "hmac", hash: "SHA-256", signature: { from: { header: "x-square-hmacsha256-signature" }, encoding: "base64" }, signed: "{url}{body}" },
    deliveryId: { json: "event_id" },
    eventType: { json: "type" },
    dedupKey: "body `event_id` (signed)",
  });

/** Paddle Billing: `Paddle-Signature: ts=…;h1=…` (an `h1` per secret during a rotation) over `{ts}:{body}`. */
export const paddle = () =>
  defineProvider({
    name: "paddle",
    docs: "https://developer.paddle.com/webhooks/signature-verification",
    scheme: {
      kind: "hmac",
      hash: "SHA-256",
      signature: { from: { header: "paddle-signature" }, keyed: { items: ";", signature: "h1", timestamp: "ts" }, encoding: "hex" },
      signed: "{timestamp}:{body}",
      timestamp: { from: "signature", unit: "seconds" },
    },
    deliveryId: { json: "event_id" },
    eventType: { json: "event_type" },
    dedupKey: "body `event_id` (signed)",
  });

/**
 * PayPal: RSA SHA256withRSA by the certificate at `PAYPAL-CERT-URL` (api.paypal.com or its sandbox),
 * over `transmission id|transmission time|webhook id|CRC-32 of the body`. The source's secret is the
 * webhook id, which is signed.
 */
export const paypal = () =>
  defineProvider({
    name: "paypal",
    docs: "https://developer.paypal.com/api/rest/webhooks/rest/",
    scheme: {
      kind: "x509",
      certUrl: { header: "paypal-cert-url" },
      allowedHosts: [/^api(-m)?\.(sandbox\.)?paypal\.com$/],
      hash: (request) => (request.headers.get("paypal-auth-algo") === "SHA256withRSA" ? "SHA-256" : null),
      signature: { from: { header: "paypal-transmission-sig" }, encoding: "base64" },
      signed: "{header:paypal-transmission-id}|{header:paypal-transmission-time}|{secret}|{crc32:body}",
      timestamp: { from: { header: "paypal-transmission-time" }, unit: "iso8601" },
    },
    deliveryId: { json: "id" },
    eventType: { json: "event_type" },
    dedupKey: "body `id` (the event, `WH-…`; signed through the body's CRC-32)",
  });

/**
 * Adyen: each `NotificationRequestItem` carries its own `additionalData.hmacSignature`, base64
 * HMAC-SHA256 under the hex-decoded key of eight of its fields joined by `:`. Every item must
 * verify; each is stored as its own delivery. Adyen needs `[accepted]` as the answer.
 */
export const adyen = () =>
  defineProvider({
    name: "adyen",
    docs: "https://docs.adyen.com/development-resources/webhooks/verify-hmac-signatures/",
    scheme: {
      kind: "hmac",
      hash: "SHA-256",
      key: "hex",
      signature: { from: { json: "additionalData.hmacSignature" }, encoding: "base64" },
      signed: "{json:pspReference}:{json:originalReference}:{json:merchantAccountCode}:{json:merchantReference}:{json:amount.value}:{json:amount.currency}:{json:eventCode}:{json:success}",
      bodySigned: "partly",
    },
    batch: {
      path: "notificationItems",
      item: "NotificationRequestItem",
      verifyEach: true,
      deliveryId: { derive: [{ json: "eventCode" }, { json: "pspReference" }, { json: "originalReference" }, { json: "success" }] },
      eventType: { json: "eventCode" },
    },
    dedupKey: "per item: `eventCode`, `pspReference`, `originalReference`, `success` (all signed)",
    acceptReply: { status: 200, contentType: "text/plain", body: "[accepted]" },
  });

/** Lemon Squeezy: `X-Signature`, hex HMAC-SHA256 of the body; no delivery id, so the signed body's digest. */
export const lemonsqueezy = () =>
  defineProvider({
    name: "lemonsqueezy",
    docs: "https://docs.lemonsqueezy.com/help/webhooks/signing-requests",
    scheme: { kind: "hmac", hash: "SHA-256", signature: { from: { header: "x-signature" }, encoding: "hex" }, signed: "{body}" },
    deliveryId: { derive: ["body"] },
    eventType: { json: "meta.event_name" },
    dedupKey: "SHA-256 of the signed body (it holds `meta.event_name`, `data.id` and `data.attributes.updated_at`)",
  });

/** Mollie (next-generation webhooks): `X-Mollie-Signature: sha256=<hex>` of the body; the event's `id`. */
export const mollie = () =>
  defineProvider({
    name: "mollie",
    docs: "https://docs.mollie.com/reference/webhooks-new",
    scheme: { kind: "hmac", hash: "SHA-256", signature: { from: { header: "x-mollie-signature" }, prefix: "sha256=", encoding: "hex" }, signed: "{body}" },
    deliveryId: { json: "id" },
    eventType: { json: "type" },
    dedupKey: "body `id` (the event, signed)",
  });

/** Coinbase Commerce: `X-CC-Webhook-Signature`, hex HMAC-SHA256 of the body; `event.id`. */
export const coinbase = () =>
  defineProvider({
    name: "coinbase",
    docs: "https://docs.cdp.coinbase.com/commerce-onchain/docs/webhooks-security",
    scheme: { kind: "hmac", hash: "SHA-256", signature: { from: { header: "x-cc-webhook-signature" }, encoding: "hex" }, signed: "{body}" },
    deliveryId: { json: "event.id" },
    eventType: { json: "event.type" },
    dedupKey: "body `event.id` (signed)",
  });

/** Plaid's API by environment (PLAID_WEBHOOK_ENV; production by default). */
const PLAID_API = { production: "https://production.plaid.com", sandbox: "https://sandbox.plaid.com" } as const;

/**
 * Plaid: an ES256 JWT in `Plaid-Verification`, whose key is asked of Plaid's API
 * (`/webhook_verification_key/get`, with the client id `PLAID_WEBHOOK_CLIENT_ID` and the secret
 * `PLAID_WEBHOOK_SECRET`) by the token's `kid`, cached by `kid`; a key Plaid marks expired verifies
 * nothing. The token's `request_body_sha256` must be the body's SHA-256 and its `iat` at most
 * 5 minutes old. Plaid sends no delivery id, and its change pings (SYNC_UPDATES_AVAILABLE) are
 * byte-identical by design: the id is derived from the body *and* the token's `iat`, so two pings
 * are two deliveries while a replayed request is a duplicate.
 */
export const plaid = () =>
  defineProvider({
    name: "plaid",
    docs: "https://plaid.com/docs/api/webhooks/webhook-verification/",
    scheme: {
      kind: "jwt",
      token: { header: "plaid-verification" },
      keys: {
        keyApi: {
          url: (context) => {
            const environment = context.setting("ENV") ?? "production";
            return Object.hasOwn(PLAID_API, environment) ? `${PLAID_API[environment as keyof typeof PLAID_API]}/webhook_verification_key/get` : null;
          },
          // Tests only: a local server, which passes the allow-list only as a loopback TEST_ONLY_ALLOWED_HOSTS host.
          urlSetting: "KEY_URL",
          allowedHosts: [/^(production|sandbox)\.plaid\.com$/],
          request: (kid, secret, context) => {
            const clientId = context.setting("CLIENT_ID");
            return clientId ? { client_id: clientId, secret, key_id: kid } : null;
          },
          keyPath: "key",
          expiredField: "expired_at",
        },
      },
      algorithms: ["ES256"],
      bodyHashClaim: "request_body_sha256",
      maxAgeSeconds: 300,
    },
    deliveryId: { derive: ["body", "timestamp"] },
    eventType: (parsed) => {
      const [type, code] = [jsonString(parsed, "webhook_type"), jsonString(parsed, "webhook_code")];
      return type && code ? `${type}.${code}` : (code ?? type);
    },
    dedupKey: "derived from the signed body and the token's `iat` (Plaid sends no id; its pings are identical by design)",
  });
