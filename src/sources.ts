/**
 * The sources this inbox accepts: `POST /webhooks/<name>` for each key below.
 *
 * Each source names its provider's verifier and options. Its secret is the `<NAME>_WEBHOOK_SECRET`
 * secret (upper-cased, `-` → `_`), e.g. `wrangler secret put STANDARD_WEBHOOK_SECRET`: one secret,
 * taken verbatim (spaces and commas are part of it). During a rotation the old one goes in
 * `<NAME>_WEBHOOK_SECRET_PREVIOUS`; both verify while both are set.
 * Add, remove or rename sources here; nothing else needs to change.
 */
import { github } from "./providers/github";
import { gitlab } from "./providers/gitlab";
import { shopify } from "./providers/shopify";
import { slack } from "./providers/slack";
import { standardWebhooks } from "./providers/standard-webhooks";
import { stripe } from "./providers/stripe";
import { twilio } from "./providers/twilio";
import type { Provider } from "./providers/types";
import { calendly, docusign, hubspot, mux, typeform } from "./providers/catalogue/business";
import { dropbox, eventgrid, graph, pubsub, sns } from "./providers/catalogue/cloud";
import { bitbucket, circleci, gitea, jira, linear, netlify, pagerduty, sentry, vercel } from "./providers/catalogue/developer";
import { discord, intercom, mailgun, meta, postmark, sendgrid, telnyx, twitch, zoom } from "./providers/catalogue/messaging";
import { adyen, coinbase, lemonsqueezy, mollie, paddle, paypal, plaid, square } from "./providers/catalogue/payments";
// import { hmac } from "./providers/hmac";
// import { defineProvider } from "./providers/engine/define";

export const SOURCES: Readonly<Record<string, Provider>> = {
  stripe: stripe(),
  github: github(),
  shopify: shopify(),
  slack: slack(),
  twilio: twilio(),
  standard: standardWebhooks(),
  svix: standardWebhooks({ headerPrefix: "svix" }),
  gitlab: gitlab(),
  paypal: paypal(),
  square: square(),
  paddle: paddle(),
  zoom: zoom(),
  twitch: twitch(),
  meta: meta(),
  sns: sns(),
  discord: discord(),
  sendgrid: sendgrid(),
  mailgun: mailgun(),
  postmark: postmark(),
  linear: linear(),
  intercom: intercom(),
  hubspot: hubspot(),
  jira: jira(),
  bitbucket: bitbucket(),
  eventgrid: eventgrid(),
  pubsub: pubsub(),
  adyen: adyen(),
  lemonsqueezy: lemonsqueezy(),
  typeform: typeform(),
  calendly: calendly(),
  mollie: mollie(),
  coinbase: coinbase(),
  docusign: docusign(),
  vercel: vercel(),
  netlify: netlify(),
  sentry: sentry(),
  graph: graph(),
  dropbox: dropbox(),
  pagerduty: pagerduty(),
  circleci: circleci(),
  gitea: gitea(),
  telnyx: telnyx(),
  mux: mux(),
  plaid: plaid(),
  // A custom source (secret in ACME_WEBHOOK_SECRET): `X-Acme-Signature: sha256=<hex>` over
  // `{timestamp}.{body}`, with the delivery id in the body's `event.id` (docs/providers.md, "Custom sources").
  // acme: hmac({
  //   header: "X-Acme-Signature",
  //   prefix: "sha256=",
  //   timestampHeader: "X-Acme-Timestamp",
  //   signedContent: "{timestamp}.{body}",
  //   deliveryId: { jsonPath: "event.id" },
  //   eventType: { header: "X-Acme-Event" },
  // }),
  // The same through the engine, and an asymmetric one (public key in ACME_KEYS_WEBHOOK_SECRET):
  // acme: defineProvider({ name: "acme", docs: "https://acme.example/webhooks", dedupKey: "body `event.id`",
  //   scheme: { kind: "hmac", hash: "SHA-256", signature: { from: { header: "X-Acme-Signature" }, prefix: "sha256=", encoding: "hex" },
  //             signed: "{timestamp}.{body}", timestamp: { from: { header: "X-Acme-Timestamp" }, unit: "seconds" } },
  //   deliveryId: { json: "event.id" }, eventType: { header: "X-Acme-Event" } }),
  // "acme-keys": defineProvider({ name: "acme-keys", docs: "…", dedupKey: "body `id`",
  //   scheme: { kind: "asymmetric", algorithm: "Ed25519", signature: { from: { header: "X-Acme-Ed25519" }, encoding: "base64" }, signed: "{body}" },
  //   deliveryId: { json: "id" } }),
};

/** The provider of a configured source, or undefined for an unknown name. */
export function findSource(name: string): Provider | undefined {
  return Object.hasOwn(SOURCES, name) ? SOURCES[name] : undefined;
}
