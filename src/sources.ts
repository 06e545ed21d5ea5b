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
// import { hmac } from "./providers/hmac";

export const SOURCES: Readonly<Record<string, Provider>> = {
  stripe: stripe(),
  github: github(),
  shopify: shopify(),
  slack: slack(),
  twilio: twilio(),
  standard: standardWebhooks(),
  svix: standardWebhooks({ headerPrefix: "svix" }),
  gitlab: gitlab(),
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
};

/** The provider of a configured source, or undefined for an unknown name. */
export function findSource(name: string): Provider | undefined {
  return Object.hasOwn(SOURCES, name) ? SOURCES[name] : undefined;
}
