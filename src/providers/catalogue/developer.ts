/**
 * Developer tools as declarations (engine: src/providers/engine). GitHub and GitLab have files of
 * their own (src/providers/github.ts, gitlab.ts).
 */
import { defineProvider } from "../engine/define";

const sha256Hub = (header: string) => ({ from: { header }, prefix: "sha256=", encoding: "hex" as const });

/** Jira Cloud (admin webhooks with a secret): `X-Hub-Signature: sha256=<hex>` of the body. */
export const jira = () =>
  defineProvider({
    name: "jira",
    docs: "https://developer.atlassian.com/cloud/jira/platform/webhooks/",
    scheme: { kind: "hmac", hash: "SHA-256", signature: sha256Hub("x-hub-signature"), signed: "{body}" },
    deliveryId: { header: "x-atlassian-webhook-identifier" },
    eventType: { json: "webhookEvent" },
    dedupKey: "`X-Atlassian-Webhook-Identifier` (kept on retries, not signed) and the body's digest",
  });

/** Bitbucket Cloud: `X-Hub-Signature: sha256=<hex>` of the body; `X-Request-UUID`, `X-Event-Key`. */
export const bitbucket = () =>
  defineProvider({
    name: "bitbucket",
    docs: "https://support.atlassian.com/bitbucket-cloud/docs/manage-webhooks/",
    scheme: { kind: "hmac", hash: "SHA-256", signature: sha256Hub("x-hub-signature"), signed: "{body}" },
    deliveryId: { header: "x-request-uuid" },
    eventType: { header: "x-event-key" },
    dedupKey: "`X-Request-UUID` (not signed) and the body's digest",
  });

/** Linear: `Linear-Signature`, hex HMAC-SHA256 of the body, whose `webhookTimestamp` (ms) must be within 60 s. */
export const linear = () =>
  defineProvider({
    name: "linear",
    docs: "https://linear.app/developers/webhooks",
    scheme: {
      kind: "hmac",
      hash: "SHA-256",
      signature: { from: { header: "linear-signature" }, encoding: "hex" },
      signed: "{body}",
      timestamp: { from: { json: "webhookTimestamp" }, unit: "milliseconds", toleranceSeconds: 60 },
    },
    deliveryId: { header: "linear-delivery" },
    eventType: { json: "type" },
    dedupKey: "`Linear-Delivery` (not signed) and the signed body's digest",
  });

/** Sentry integrations: `Sentry-Hook-Signature`, hex HMAC-SHA256 of the body; `Request-ID`, `Sentry-Hook-Resource`. */
export const sentry = () =>
  defineProvider({
    name: "sentry",
    docs: "https://docs.sentry.io/organization/integrations/integration-platform/webhooks/",
    scheme: { kind: "hmac", hash: "SHA-256", signature: { from: { header: "sentry-hook-signature" }, encoding: "hex" }, signed: "{body}" },
    deliveryId: { header: "request-id" },
    eventType: { header: "sentry-hook-resource" },
    dedupKey: "`Request-ID` (not signed) and the body's digest",
  });

/** Vercel: `x-vercel-signature`, hex HMAC-SHA1 of the body; the body's `id`. */
export const vercel = () =>
  defineProvider({
    name: "vercel",
    docs: "https://vercel.com/docs/webhooks/webhooks-api#securing-webhooks",
    scheme: { kind: "hmac", hash: "SHA-1", signature: { from: { header: "x-vercel-signature" }, encoding: "hex" }, signed: "{body}" },
    deliveryId: { json: "id" },
    eventType: { json: "type" },
    dedupKey: "body `id` (signed)",
  });

/** Netlify: `X-Webhook-Signature` is a JWS (HS256, `iss: netlify`) whose `sha256` claim is the body's hash. */
export const netlify = () =>
  defineProvider({
    name: "netlify",
    docs: "https://docs.netlify.com/site-deploys/notifications/#payload-signature",
    scheme: { kind: "jwt", token: { header: "x-webhook-signature" }, keys: { shared: true }, algorithms: ["HS256"], issuer: "netlify", bodyHashClaim: "sha256" },
    deliveryId: { derive: ["body"] },
    eventType: { json: "state" },
    dedupKey: "SHA-256 of the signed body (the deploy's `id`, `state` and `updated_at`)",
  });

/** PagerDuty (v3): `X-PagerDuty-Signature: v1=<hex>[,v1=<hex>]` of the body; `event.id`. */
export const pagerduty = () =>
  defineProvider({
    name: "pagerduty",
    docs: "https://developer.pagerduty.com/docs/webhooks/webhook-signatures",
    scheme: { kind: "hmac", hash: "SHA-256", signature: { from: { header: "x-pagerduty-signature" }, list: ",", prefix: "v1=", encoding: "hex" }, signed: "{body}" },
    deliveryId: { json: "event.id" },
    eventType: { json: "event.event_type" },
    dedupKey: "body `event.id` (signed)",
  });

/** CircleCI: `circleci-signature: v1=<hex>` of the body; the body's `id`. */
export const circleci = () =>
  defineProvider({
    name: "circleci",
    docs: "https://circleci.com/docs/webhooks/#validate-webhooks",
    scheme: { kind: "hmac", hash: "SHA-256", signature: { from: { header: "circleci-signature" }, list: ",", prefix: "v1=", encoding: "hex" }, signed: "{body}" },
    deliveryId: { json: "id" },
    eventType: { json: "type" },
    dedupKey: "body `id` (signed)",
  });

/** Gitea / Forgejo: `X-Gitea-Signature`, hex HMAC-SHA256 of the body; `X-Gitea-Delivery`, `X-Gitea-Event`. */
export const gitea = () =>
  defineProvider({
    name: "gitea",
    docs: "https://docs.gitea.com/usage/webhooks",
    scheme: { kind: "hmac", hash: "SHA-256", signature: { from: { header: "x-gitea-signature" }, encoding: "hex" }, signed: "{body}" },
    deliveryId: { header: "x-gitea-delivery" },
    eventType: { header: "x-gitea-event" },
    dedupKey: "`X-Gitea-Delivery` (not signed) and the body's digest",
  });
