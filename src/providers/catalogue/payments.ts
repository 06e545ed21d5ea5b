/**
 * Payment providers as declarations (engine: src/providers/engine). Stripe has a file of its own
 * (src/providers/stripe.ts). Each declaration names its documentation.
 */
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
