/** Business and forms providers as declarations (engine: src/providers/engine). */
import { defineProvider } from "../engine/define";

/**
 * HubSpot (signature v3): `X-HubSpot-Signature-v3`, base64 HMAC-SHA256 of method + URL + body +
 * `X-HubSpot-Request-Timestamp` (ms, 5 minutes). A batch: each event is a delivery.
 */
export const hubspot = () =>
  defineProvider({
    name: "hubspot",
    docs: "https://developers.hubspot.com/docs/api/webhooks/validating-requests",
    scheme: {
      kind: "hmac",
      hash: "SHA-256",
      signature: { from: { header: "x-hubspot-signature-v3" }, encoding: "base64" },
      signed: "{method}{url}{body}{timestamp}",
      timestamp: { from: { header: "x-hubspot-request-timestamp" }, unit: "milliseconds" },
    },
    batch: {
      path: "",
      // HubSpot says `eventId` alone is not guaranteed unique: with the subscription, object and time it is.
      deliveryId: { derive: [{ json: "eventId" }, { json: "subscriptionId" }, { json: "subscriptionType" }, { json: "objectId" }, { json: "occurredAt" }] },
      eventType: { json: "subscriptionType" },
    },
    dedupKey: "per event: `eventId`, `subscriptionId`, `subscriptionType`, `objectId`, `occurredAt` (signed; `attemptNumber` left out)",
  });

/** Typeform: `Typeform-Signature: sha256=<base64>` of the body; `event_id`. */
export const typeform = () =>
  defineProvider({
    name: "typeform",
    docs: "https://www.typeform.com/developers/webhooks/secure-your-webhooks/",
    scheme: { kind: "hmac", hash: "SHA-256", signature: { from: { header: "typeform-signature" }, prefix: "sha256=", encoding: "base64" }, signed: "{body}" },
    deliveryId: { json: "event_id" },
    eventType: { json: "event_type" },
    dedupKey: "body `event_id` (signed)",
  });

/** Calendly: `Calendly-Webhook-Signature: t=…,v1=…` over `{t}.{body}` (3 minutes); no delivery id. */
export const calendly = () =>
  defineProvider({
    name: "calendly",
    docs: "https://developer.calendly.com/api-docs/4c305798a61d3-webhook-signatures",
    scheme: {
      kind: "hmac",
      hash: "SHA-256",
      signature: { from: { header: "calendly-webhook-signature" }, keyed: { items: ",", signature: "v1", timestamp: "t" }, encoding: "hex" },
      signed: "{timestamp}.{body}",
      timestamp: { from: "signature", unit: "seconds", toleranceSeconds: 180 },
    },
    deliveryId: { derive: [{ json: "event" }, { json: "created_at" }, { json: "payload.uri" }] },
    eventType: { json: "event" },
    dedupKey: "derived from the signed body's `event`, `created_at` and `payload.uri`",
  });

/**
 * DocuSign Connect: `X-DocuSign-Signature-1..N`, base64 HMAC-SHA256 of the body, one header per
 * HMAC key of the account (several during a rotation): any may match the configured key (and the
 * previous one), each compared in constant time. No delivery id.
 */
/** DocuSign lets an account hold up to 100 HMAC keys, each signing in its own header. */
const DOCUSIGN_MAX_KEYS = 100;

export const docusign = () =>
  defineProvider({
    name: "docusign",
    docs: "https://developers.docusign.com/platform/webhooks/connect/validate/",
    scheme: { kind: "hmac", hash: "SHA-256", signature: { from: { numberedHeaders: "x-docusign-signature-", max: DOCUSIGN_MAX_KEYS }, encoding: "base64" }, signed: "{body}" },
    deliveryId: { derive: [{ json: "event" }, { json: "generatedDateTime" }, { json: "data.envelopeId" }] },
    eventType: { json: "event" },
    dedupKey: "derived from the signed body's `event`, `generatedDateTime` and `data.envelopeId`",
  });

/** Mux: `Mux-Signature: t=…,v1=…` over `{t}.{body}`; the event `id`. */
export const mux = () =>
  defineProvider({
    name: "mux",
    docs: "https://docs.mux.com/core/verify-webhook-signatures",
    scheme: {
      kind: "hmac",
      hash: "SHA-256",
      signature: { from: { header: "mux-signature" }, keyed: { items: ",", signature: "v1", timestamp: "t" }, encoding: "hex" },
      signed: "{timestamp}.{body}",
      timestamp: { from: "signature", unit: "seconds" },
    },
    deliveryId: { json: "id" },
    eventType: { json: "type" },
    dedupKey: "body `id` (signed)",
  });
