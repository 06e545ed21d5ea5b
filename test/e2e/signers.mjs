/** Provider signers for the e2e suite and the benchmark: the providers' official SDKs. */
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

/** A Standard Webhooks delivery signed by the `standardwebhooks` library. */
export function standardDelivery(id, payload = { type: "invoice.paid" }, secret = SECRETS.STANDARD_WEBHOOK_SECRET) {
  const body = JSON.stringify(payload);
  const at = new Date();
  return {
    path: "/webhooks/standard",
    body,
    headers: {
      "content-type": "application/json",
      "webhook-id": id,
      "webhook-timestamp": String(Math.floor(at.getTime() / 1000)),
      "webhook-signature": new StandardWebhook(secret).sign(id, at, body),
    },
  };
}

/** A Svix delivery signed by the `svix` library. */
export function svixDelivery(id, payload = { type: "user.created" }, secret = SECRETS.SVIX_WEBHOOK_SECRET) {
  const body = JSON.stringify(payload);
  const at = new Date();
  return {
    path: "/webhooks/svix",
    body,
    headers: {
      "content-type": "application/json",
      "svix-id": id,
      "svix-timestamp": String(Math.floor(at.getTime() / 1000)),
      "svix-signature": new SvixWebhook(secret).sign(id, at, body),
    },
  };
}
