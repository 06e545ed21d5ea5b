/**
 * Cloud push services as declarations (engine: src/providers/engine): AWS SNS, Azure Event Grid,
 * Google Pub/Sub push, Microsoft Graph, Dropbox.
 */
import { jsonString } from "../crypto";
import { defineProvider } from "../engine/define";
import { eventGridValidation, queryEcho, snsConfirmation } from "../engine/handshakes";

const SNS_HOSTS = [/^sns\.[a-z0-9-]+\.amazonaws\.com(\.cn)?$/];

/** The fields SNS signs, in its order, each as `name\nvalue\n` (absent optional ones left out). */
const SNS_FIELDS: Record<string, readonly string[]> = {
  Notification: ["Message", "MessageId", "Subject", "Timestamp", "TopicArn", "Type"],
  SubscriptionConfirmation: ["Message", "MessageId", "SubscribeURL", "Timestamp", "Token", "TopicArn", "Type"],
  UnsubscribeConfirmation: ["Message", "MessageId", "SubscribeURL", "Timestamp", "Token", "TopicArn", "Type"],
};

/** SNS's canonical string to sign, or null for an unknown `Type` or a missing field. */
export function snsStringToSign(_request: unknown, parsed: unknown): string | null {
  const fields = SNS_FIELDS[jsonString(parsed, "Type") ?? ""];
  if (!fields) return null;
  let text = "";
  for (const field of fields) {
    const value = jsonString(parsed, field);
    if (value === null) {
      if (field === "Subject") continue;
      return null;
    }
    text += `${field}\n${value}\n`;
  }
  return text;
}

/**
 * AWS SNS (HTTP/S subscription): RSA by the certificate at `SigningCertURL` (sns.<region>.amazonaws.com),
 * SHA-1 for `SignatureVersion` 1, SHA-256 for 2. The secret is the topic ARN the source accepts.
 * A `SubscriptionConfirmation` is confirmed by GETting its `SubscribeURL`.
 */
export const sns = () =>
  defineProvider({
    name: "sns",
    docs: "https://docs.aws.amazon.com/sns/latest/dg/sns-verify-signature-of-message.html",
    scheme: {
      kind: "x509",
      certUrl: { json: "SigningCertURL" },
      allowedHosts: SNS_HOSTS,
      hash: (_request, parsed) => ({ "1": "SHA-1", "2": "SHA-256" } as const)[jsonString(parsed, "SignatureVersion") ?? ""] ?? null,
      signature: { from: { json: "Signature" }, encoding: "base64" },
      signed: snsStringToSign,
      secretMatches: { json: "TopicArn" },
    },
    deliveryId: { json: "MessageId" },
    eventType: { json: "Subject" },
    // The canonical string signs MessageId, Message, Subject, Timestamp, TopicArn and Type: every
    // field that matters, not the body's bytes (whitespace, field order, unsigned extras).
    gradeOverride: { deliveryIdSigned: true },
    handshakes: [snsConfirmation(SNS_HOSTS)],
    lifecycle: ({ parsed }) => (jsonString(parsed, "Type") === "UnsubscribeConfirmation" ? { kind: "UnsubscribeConfirmation", detail: jsonString(parsed, "TopicArn") ?? "" } : null),
    dedupKey: "body `MessageId` (signed, kept on SNS's retries)",
  });

/**
 * Azure Event Grid (Event Grid schema): no payload signature; the secret is a query parameter of the
 * endpoint URL (`?key=…`). A batch, each event by its `id`. Answers the validation event, and the
 * CloudEvents abuse-protection OPTIONS.
 */
export const eventgrid = () =>
  defineProvider({
    name: "eventgrid",
    docs: "https://learn.microsoft.com/en-us/azure/event-grid/webhook-event-delivery",
    scheme: { kind: "url-secret", query: "key" },
    batch: { path: "", deliveryId: { json: "id" }, eventType: { json: "eventType" } },
    methods: ["OPTIONS"],
    unsignedHandshakes: [
      ({ request }) => {
        const origin = request.method === "OPTIONS" ? request.headers.get("webhook-request-origin") : null;
        return origin ? { name: "abuse-protection", status: 200, body: "", headers: { "WebHook-Allowed-Origin": origin } } : null;
      },
    ],
    handshakes: [eventGridValidation],
    dedupKey: "per event: `id` (not signed) and the event's digest",
  });

/**
 * Google Pub/Sub push: an OIDC token (RS256, Google's keys) in `Authorization: Bearer`; its audience
 * is the source's secret, its `email` the `PUBSUB_WEBHOOK_SERVICE_ACCOUNT` when set. The body is
 * not signed.
 */
export const pubsub = () =>
  defineProvider({
    name: "pubsub",
    docs: "https://cloud.google.com/pubsub/docs/authenticate-push-subscriptions",
    scheme: {
      kind: "jwt",
      token: { header: "authorization" },
      prefix: "Bearer ",
      keys: { jwksUrl: "https://www.googleapis.com/oauth2/v3/certs", jwksSetting: "JWKS_URL", allowedHosts: [/^www\.googleapis\.com$/] },
      algorithms: ["RS256"],
      issuer: ["https://accounts.google.com", "accounts.google.com"],
      audience: "secret",
      claimSetting: { claim: "email", setting: "SERVICE_ACCOUNT" },
    },
    deliveryId: { json: "message.messageId" },
    eventType: { json: "message.attributes.eventType" },
    credentialHeaders: ["authorization"],
    dedupKey: "body `message.messageId` (not signed: the token covers no body) and the body's digest",
  });

/**
 * Microsoft Graph change notifications: no signature; each notification echoes the subscription's
 * `clientState`, the source's secret. The `validationToken` is echoed as text; lifecycle
 * notifications (`reauthorizationRequired`, `missed`, `subscriptionRemoved`) are not events.
 */
export const graph = () =>
  defineProvider({
    name: "graph",
    docs: "https://learn.microsoft.com/en-us/graph/change-notifications-delivery-webhooks",
    scheme: { kind: "shared-secret", from: { json: "clientState" } },
    batch: { path: "value", verifyEach: true, deliveryId: { derive: ["body"] }, eventType: { json: "changeType" } },
    unsignedHandshakes: [queryEcho("validationToken", "POST")],
    lifecycle: ({ parsed }) => {
      const kind = jsonString(parsed, "value.0.lifecycleEvent");
      return kind ? { kind, detail: jsonString(parsed, "value.0.subscriptionId") ?? "" } : null;
    },
    dedupKey: "per notification: SHA-256 of its bytes (subscription, resource, change type and its resource data's etag; Graph sends no id)",
    acceptReply: { status: 202, body: "" },
  });

/**
 * Dropbox: `X-Dropbox-Signature`, hex HMAC-SHA256 of the body with the app secret; the GET
 * `challenge` is echoed as text. A notification is a ping ("these accounts changed") with no id, and
 * two real pings are byte-identical: each request is a delivery of its own.
 */
export const dropbox = () =>
  defineProvider({
    name: "dropbox",
    docs: "https://www.dropbox.com/developers/reference/webhooks",
    scheme: { kind: "hmac", hash: "SHA-256", signature: { from: { header: "x-dropbox-signature" }, encoding: "hex" }, signed: "{body}" },
    deliveryId: "per-request",
    methods: ["GET"],
    unsignedHandshakes: [queryEcho("challenge", "GET")],
    dedupKey: "none: each request is its own delivery (pings are identical by design; a retry runs twice, which a ping allows)",
  });
