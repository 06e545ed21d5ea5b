/** Provider signers for the e2e suite and the benchmark: the providers' official SDKs. */
import { createHmac } from "node:crypto";
import { sign as signGithub } from "@octokit/webhooks-methods";
import { Webhook as StandardWebhook } from "standardwebhooks";
import Stripe from "stripe";
import { Webhook as SvixWebhook } from "svix";
import { SECRETS } from "./harness.mjs";

const stripe = new Stripe("sk_test_unused_for_signing");

/** A Stripe event delivery signed by stripe-node. */
export function stripeDelivery(event, secret = SECRETS.STRIPE_WEBHOOK_SECRET) {
  const body = JSON.stringify(event);
  const signature = stripe.webhooks.generateTestHeaderString({ payload: body, secret });
  return { path: "/webhooks/stripe", body, headers: { "content-type": "application/json", "stripe-signature": signature } };
}

/**
 * A Stripe event delivery signed with Node's crypto, by the scheme stripe-node uses (`t=…,v1=`,
 * HMAC-SHA256 hex of `t.body`; a wrong signature would answer 401 and fail its users): for load,
 * where stripe-node on every request would slow the sender down.
 */
export function stripeDeliveryByHmac(event, secret = SECRETS.STRIPE_WEBHOOK_SECRET) {
  const body = JSON.stringify(event);
  const t = Math.floor(Date.now() / 1000);
  const v1 = createHmac("sha256", secret).update(`${t}.${body}`).digest("hex");
  return { path: "/webhooks/stripe", body, headers: { "content-type": "application/json", "stripe-signature": `t=${t},v1=${v1}` } };
}

/** A Stripe `payment_intent.succeeded` event; `amount` undefined makes the broken one. */
export function paymentEvent(id, amount, customer = "cus_e2e") {
  const object = { id: `pi_${id}`, object: "payment_intent", currency: "usd", customer };
  if (amount !== undefined) object.amount = amount;
  return { id, object: "event", type: "payment_intent.succeeded", created: Math.floor(Date.now() / 1000), data: { object } };
}

/** A GitHub delivery signed by @octokit/webhooks-methods. */
export async function githubDelivery(deliveryId, event = "push", payload = { ref: "refs/heads/main" }, secret = SECRETS.GITHUB_WEBHOOK_SECRET) {
  const body = JSON.stringify(payload);
  return {
    path: "/webhooks/github",
    body,
    headers: {
      "content-type": "application/json",
      "x-github-delivery": deliveryId,
      "x-github-event": event,
      "x-hub-signature-256": await signGithub(secret, body),
    },
  };
}

/** A delivery in the Standard Webhooks scheme under `prefix`-* headers, signed by `signer`'s own `sign`. */
function standardScheme(source, prefix, signer, id, payload) {
  const body = JSON.stringify(payload);
  const at = new Date();
  return {
    path: `/webhooks/${source}`,
    body,
    headers: {
      "content-type": "application/json",
      [`${prefix}-id`]: id,
      [`${prefix}-timestamp`]: String(Math.floor(at.getTime() / 1000)),
      [`${prefix}-signature`]: signer.sign(id, at, body),
    },
  };
}

/** A Standard Webhooks delivery signed by the `standardwebhooks` library. */
export function standardDelivery(id, payload = { type: "invoice.paid" }, secret = SECRETS.STANDARD_WEBHOOK_SECRET) {
  return standardScheme("standard", "webhook", new StandardWebhook(secret), id, payload);
}

/** A Svix delivery signed by the `svix` library. */
export function svixDelivery(id, payload = { type: "user.created" }, secret = SECRETS.SVIX_WEBHOOK_SECRET) {
  return standardScheme("svix", "svix", new SvixWebhook(secret), id, payload);
}

/** A Shopify delivery, signed with Node's own crypto (Shopify publishes no SDK signer). */
export function shopifyDelivery(webhookId, payload = { id: 1, total_price: "10.00" }, secret = SECRETS.SHOPIFY_WEBHOOK_SECRET) {
  const body = JSON.stringify(payload);
  return {
    path: "/webhooks/shopify",
    body,
    headers: {
      "content-type": "application/json",
      "x-shopify-webhook-id": webhookId,
      "x-shopify-topic": "orders/create",
      "x-shopify-hmac-sha256": createHmac("sha256", secret).update(body).digest("base64"),
    },
  };
}

/** A Slack Events API delivery, signed with Node's own crypto as Slack's docs describe. */
export function slackDelivery(eventId, secret = SECRETS.SLACK_WEBHOOK_SECRET, timestamp = Math.floor(Date.now() / 1000)) {
  const body = JSON.stringify({ type: "event_callback", event_id: eventId, event_time: timestamp, event: { type: "app_mention", text: "hi" } });
  const signature = `v0=${createHmac("sha256", secret).update(`v0:${timestamp}:${body}`).digest("hex")}`;
  return {
    path: "/webhooks/slack",
    body,
    headers: { "content-type": "application/json", "x-slack-request-timestamp": String(timestamp), "x-slack-signature": signature },
  };
}

/**
 * A Twilio form-encoded webhook to `baseUrl`, signed with Node's own crypto as twilio-node's
 * `getExpectedTwilioSignature` does: URL + params sorted by name, each `name + value`, HMAC-SHA1.
 */
export function twilioDelivery(baseUrl, params, secret = SECRETS.TWILIO_WEBHOOK_SECRET) {
  const url = `${baseUrl}/webhooks/twilio`;
  const data = Object.keys(params)
    .sort()
    .reduce((text, name) => text + name + params[name], url);
  return {
    path: "/webhooks/twilio",
    body: new URLSearchParams(params).toString(),
    headers: {
      "content-type": "application/x-www-form-urlencoded",
      "x-twilio-signature": createHmac("sha1", secret).update(data).digest("base64"),
    },
  };
}
