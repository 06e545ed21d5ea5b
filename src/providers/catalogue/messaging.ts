/**
 * Messaging, email and meeting providers as declarations (engine: src/providers/engine). Slack and
 * Twilio have files of their own (src/providers/slack.ts, twilio.ts).
 */
import { defineProvider } from "../engine/define";
import { discordAccept, discordEventType, discordPing, twitchChallenge, verifyTokenGet, zoomUrlValidation } from "../engine/handshakes";
import { jsonString } from "../crypto";

/** Zoom: `x-zm-signature: v0=<hex>` over `v0:{x-zm-request-timestamp}:{body}`; no delivery id. */
export const zoom = () =>
  defineProvider({
    name: "zoom",
    docs: "https://developers.zoom.us/docs/api/webhooks/#verify-webhook-events",
    scheme: {
      kind: "hmac",
      hash: "SHA-256",
      signature: { from: { header: "x-zm-signature" }, prefix: "v0=", encoding: "hex" },
      signed: "v0:{timestamp}:{body}",
      timestamp: { from: { header: "x-zm-request-timestamp" }, unit: "seconds" },
    },
    deliveryId: { derive: [{ json: "event" }, { json: "event_ts" }, { json: "payload.object.id" }, { json: "payload.object.uuid" }] },
    eventType: { json: "event" },
    handshakes: [zoomUrlValidation],
    dedupKey: "derived from the signed body's `event`, `event_ts`, `payload.object.id` and `payload.object.uuid`",
  });

/**
 * Twitch EventSub: `Twitch-Eventsub-Message-Signature: sha256=<hex>` over message id + timestamp +
 * body (10 minutes' tolerance, as Twitch says). The challenge is answered as text; `revocation`
 * is a lifecycle message.
 */
export const twitch = () =>
  defineProvider({
    name: "twitch",
    docs: "https://dev.twitch.tv/docs/eventsub/handling-webhook-events/#verifying-the-event-message",
    scheme: {
      kind: "hmac",
      hash: "SHA-256",
      signature: { from: { header: "twitch-eventsub-message-signature" }, prefix: "sha256=", encoding: "hex" },
      signed: "{id}{timestamp}{body}",
      timestamp: { from: { header: "twitch-eventsub-message-timestamp" }, unit: "iso8601", toleranceSeconds: 600 },
    },
    deliveryId: { header: "twitch-eventsub-message-id" },
    eventType: { json: "subscription.type" },
    handshakes: [twitchChallenge],
    lifecycle: ({ request, parsed }) =>
      request.headers.get("twitch-eventsub-message-type") === "revocation"
        ? { kind: "revocation", detail: `${jsonString(parsed, "subscription.type")} ${jsonString(parsed, "subscription.status")}` }
        : null,
    dedupKey: "`Twitch-Eventsub-Message-Id` (signed)",
  });

/** Meta (Facebook, Instagram, WhatsApp): `X-Hub-Signature-256` of the body; the GET handshake with `META_WEBHOOK_VERIFY_TOKEN`. */
export const meta = () =>
  defineProvider({
    name: "meta",
    docs: "https://developers.facebook.com/docs/graph-api/webhooks/getting-started",
    scheme: { kind: "hmac", hash: "SHA-256", signature: { from: { header: "x-hub-signature-256" }, prefix: "sha256=", encoding: "hex" }, signed: "{body}" },
    deliveryId: { derive: ["body"] },
    eventType: { json: "object" },
    methods: ["GET"],
    unsignedHandshakes: [verifyTokenGet],
    dedupKey: "SHA-256 of the signed body (its `entry[].id`, `entry[].time` and the changes; Meta sends no delivery id)",
  });

/**
 * Discord (Webhook Events and Interactions): Ed25519 over `{X-Signature-Timestamp}{body}`, public
 * key hex. PINGs are answered; an interaction is stored and answered with a deferred response
 * (engine/handshakes.ts `discordAccept`), a webhook event with 204.
 */
export const discord = () =>
  defineProvider({
    name: "discord",
    docs: "https://discord.com/developers/docs/events/webhook-events",
    scheme: {
      kind: "asymmetric",
      algorithm: "Ed25519",
      signature: { from: { header: "x-signature-ed25519" }, encoding: "hex" },
      signed: "{timestamp}{body}",
      timestamp: { from: { header: "x-signature-timestamp" }, unit: "seconds" },
    },
    deliveryId: { derive: ["body"] },
    eventType: discordEventType,
    handshakes: [discordPing],
    acceptReply: discordAccept,
    dedupKey: "SHA-256 of the signed body (an event's type, timestamp and data; an interaction's id)",
  });

/** SendGrid Event Webhook: ECDSA P-256 over `{timestamp}{body}`; a batch, each event by `sg_event_id`. */
export const sendgrid = () =>
  defineProvider({
    name: "sendgrid",
    docs: "https://www.twilio.com/docs/sendgrid/for-developers/tracking-events/getting-started-event-webhook-security-features",
    scheme: {
      kind: "asymmetric",
      algorithm: "ECDSA-P256-SHA256",
      signature: { from: { header: "x-twilio-email-event-webhook-signature" }, encoding: "base64" },
      signed: "{timestamp}{body}",
      timestamp: { from: { header: "x-twilio-email-event-webhook-timestamp" }, unit: "seconds" },
    },
    batch: { path: "", deliveryId: { json: "sg_event_id" }, eventType: { json: "event" } },
    dedupKey: "per event: `sg_event_id` (signed)",
  });

/** Mailgun: the body's `signature` object, hex HMAC-SHA256 of `timestamp` + `token`; the body itself is not signed. */
export const mailgun = () =>
  defineProvider({
    name: "mailgun",
    docs: "https://documentation.mailgun.com/docs/mailgun/user-manual/webhooks/securing-webhooks",
    scheme: {
      kind: "hmac",
      hash: "SHA-256",
      signature: { from: { json: "signature.signature" }, encoding: "hex" },
      signed: "{json:signature.timestamp}{json:signature.token}",
      timestamp: { from: { json: "signature.timestamp" }, unit: "seconds" },
      bodySigned: false,
    },
    deliveryId: { json: "event-data.id" },
    eventType: { json: "event-data.event" },
    dedupKey: "`event-data.id` (not signed), and the signed timestamp + token (a replay with any body is a duplicate)",
  });

/** Postmark: no signature; HTTP Basic credentials in the webhook URL (`user:password` is the secret). */
export const postmark = () =>
  defineProvider({
    name: "postmark",
    docs: "https://postmarkapp.com/developer/webhooks/webhooks-overview#protecting-your-webhook",
    scheme: { kind: "shared-secret", from: "basic" },
    deliveryId: { derive: ["body"] },
    eventType: { json: "RecordType" },
    dedupKey: "SHA-256 of the body (`RecordType`, `MessageID` and the event's time; Postmark sends no id)",
  });

/** Intercom: `X-Hub-Signature: sha1=<hex>`, HMAC-SHA1 of the body with the app's client secret; the notification `id`. */
export const intercom = () =>
  defineProvider({
    name: "intercom",
    docs: "https://developers.intercom.com/docs/references/webhooks/webhook-models#signed-notifications",
    scheme: { kind: "hmac", hash: "SHA-1", signature: { from: { header: "x-hub-signature" }, prefix: "sha1=", encoding: "hex" }, signed: "{body}" },
    deliveryId: { json: "id" },
    eventType: { json: "topic" },
    dedupKey: "body `id` (`notif_…`, signed)",
  });

/** Telnyx (API v2): Ed25519 over `{telnyx-timestamp}|{body}`, base64 signature; `data.id`. */
export const telnyx = () =>
  defineProvider({
    name: "telnyx",
    docs: "https://developers.telnyx.com/docs/messaging/messages/receiving-webhooks",
    scheme: {
      kind: "asymmetric",
      algorithm: "Ed25519",
      signature: { from: { header: "telnyx-signature-ed25519" }, encoding: "base64" },
      signed: "{timestamp}|{body}",
      timestamp: { from: { header: "telnyx-timestamp" }, unit: "seconds" },
    },
    deliveryId: { json: "data.id" },
    eventType: { json: "data.event_type" },
    dedupKey: "body `data.id` (signed)",
  });
