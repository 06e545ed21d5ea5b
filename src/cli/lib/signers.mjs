/**
 * How each provider signs a webhook, for `webhook-inbox send`: the headers a provider would send
 * with a body, given the source's secret. Node's own crypto, one small function per provider, the
 * scheme exactly as the provider documents it (test/cli/send.test.mjs checks every one against
 * the provider's official SDK where one verifies, and test/e2e/send.test.mjs against the inbox).
 */
import { createHmac } from "node:crypto";

/**
 * @typedef {{ body: string, secret: string, id: string, eventType: string, url: string, nowSeconds: number }} SignInput
 * @typedef {(input: SignInput) => Record<string, string>} Signer
 */

/** @param {string} algorithm @param {string | Buffer} key @param {string} data @param {"hex" | "base64"} encoding */
const hmac = (algorithm, key, data, encoding) => createHmac(algorithm, key).update(data, "utf8").digest(encoding);

/** Standard Webhooks (and Svix): `{id}.{timestamp}.{body}`, keyed with the base64 after `whsec_`. */
function standardScheme(/** @type {string} */ prefix) {
  /** @type {Signer} */
  return ({ body, secret, id, nowSeconds }) => {
    const key = Buffer.from(secret.startsWith("whsec_") ? secret.slice("whsec_".length) : secret, "base64");
    return {
      "content-type": "application/json",
      [`${prefix}-id`]: id,
      [`${prefix}-timestamp`]: String(nowSeconds),
      [`${prefix}-signature`]: `v1,${hmac("sha256", key, `${id}.${nowSeconds}.${body}`, "base64")}`,
    };
  };
}

/** @type {Record<string, Signer>} */
export const SIGNERS = {
  // Stripe-Signature: t=<unix>,v1=<hex HMAC-SHA256 of "t.body">; the id and type are in the body.
  stripe: ({ body, secret, nowSeconds }) => ({
    "content-type": "application/json",
    "stripe-signature": `t=${nowSeconds},v1=${hmac("sha256", secret, `${nowSeconds}.${body}`, "hex")}`,
  }),
  // X-Hub-Signature-256: sha256=<hex HMAC-SHA256 of the body>.
  github: ({ body, secret, id, eventType }) => ({
    "content-type": "application/json",
    "x-github-delivery": id,
    "x-github-event": eventType,
    "x-hub-signature-256": `sha256=${hmac("sha256", secret, body, "hex")}`,
  }),
  // X-Shopify-Hmac-Sha256: base64 HMAC-SHA256 of the body.
  shopify: ({ body, secret, id, eventType }) => ({
    "content-type": "application/json",
    "x-shopify-webhook-id": id,
    "x-shopify-topic": eventType,
    "x-shopify-hmac-sha256": hmac("sha256", secret, body, "base64"),
  }),
  // X-Slack-Signature: v0=<hex HMAC-SHA256 of "v0:timestamp:body">; the id is the body's event_id.
  slack: ({ body, secret, nowSeconds }) => ({
    "content-type": "application/json",
    "x-slack-request-timestamp": String(nowSeconds),
    "x-slack-signature": `v0=${hmac("sha256", secret, `v0:${nowSeconds}:${body}`, "hex")}`,
  }),
  standard: standardScheme("webhook"),
  svix: standardScheme("svix"),
  // GitLab signs nothing: X-Gitlab-Token is the secret itself.
  gitlab: ({ secret, id, eventType }) => ({
    "content-type": "application/json",
    "x-gitlab-token": secret,
    "idempotency-key": id,
    "x-gitlab-event": eventType,
  }),
  // X-Twilio-Signature: base64 HMAC-SHA1 of the URL called, then each form parameter as name+value, sorted by name.
  twilio: ({ body, secret, id, url }) => {
    const form = new URLSearchParams(body);
    const names = [...new Set(form.keys())].sort();
    const signed = names.reduce((text, name) => text + form.getAll(name).sort().map((value) => name + value).join(""), url);
    return {
      "content-type": "application/x-www-form-urlencoded",
      "i-twilio-idempotency-token": id,
      "x-twilio-signature": hmac("sha1", secret, signed, "base64"),
    };
  },
};

/** The providers `send` can sign for. */
export const PROVIDERS = Object.keys(SIGNERS);
