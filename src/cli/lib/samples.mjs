/**
 * Sample deliveries for `webhook-inbox send`: a small body in each provider's own shape, and where
 * its delivery id and event type go. A provider whose id (or type) travels in a header gets it from
 * `--id` (or `--event`); one whose id is in the body (Stripe, Slack) has it written there, so that
 * a file sent with `--id` is a new delivery, and without it the very same one again. Each sample of
 * a provider that deduplicates on content (GitHub, Shopify, GitLab, Twilio) carries a random value,
 * so that two samples are two deliveries, as two real events would be.
 */
import { randomUUID } from "node:crypto";

/**
 * @typedef {{
 *   idInBody?: (body: any, id: string) => void,
 *   idOfBody?: (body: any) => string | undefined,
 *   newId: () => string,
 *   defaultEvent: string,
 *   sample: (id: string, eventType: string, nowSeconds: number) => unknown,
 * }} Sample
 */

const short = () => randomUUID().replaceAll("-", "").slice(0, 16);

/** @type {Record<string, Sample>} */
export const SAMPLES = {
  stripe: {
    newId: () => `evt_${short()}`,
    idInBody: (body, id) => void (body.id = id),
    idOfBody: (body) => body?.id,
    defaultEvent: "payment_intent.succeeded",
    sample: (id, type, now) => ({
      id,
      object: "event",
      type,
      created: now,
      livemode: false,
      data: { object: { id: `pi_${short()}`, object: "payment_intent", amount: 2499, currency: "usd", customer: "cus_sample", status: "succeeded" } },
    }),
  },
  github: {
    newId: () => randomUUID(),
    defaultEvent: "push",
    sample: () => ({ ref: "refs/heads/main", before: "0".repeat(40), after: `${short()}${short()}${short().slice(0, 8)}`, repository: { full_name: "octo-org/sample" }, pusher: { name: "octocat" } }),
  },
  shopify: {
    newId: () => randomUUID(),
    defaultEvent: "orders/create",
    sample: () => ({ id: Number.parseInt(short().slice(0, 12), 16), email: "jon@example.com", total_price: "24.99", currency: "USD", line_items: [{ title: "Sample", quantity: 1 }] }),
  },
  slack: {
    newId: () => `Ev${short().toUpperCase()}`,
    idInBody: (body, id) => void (body.event_id = id),
    idOfBody: (body) => body?.event_id,
    defaultEvent: "app_mention",
    sample: (id, type, now) => ({ type: "event_callback", team_id: "T0SAMPLE", api_app_id: "A0SAMPLE", event_id: id, event_time: now, event: { type, user: "U0SAMPLE", text: "<@U0BOT> hello", channel: "C0SAMPLE" } }),
  },
  standard: {
    newId: () => `msg_${short()}`,
    defaultEvent: "invoice.paid",
    sample: (_id, type, now) => ({ type, timestamp: new Date(now * 1000).toISOString(), data: { invoice: "in_sample", amount: 2499 } }),
  },
  svix: {
    newId: () => `msg_${short()}`,
    defaultEvent: "user.created",
    sample: (_id, type, now) => ({ type, timestamp: new Date(now * 1000).toISOString(), data: { id: "user_sample", email: "jon@example.com" } }),
  },
  gitlab: {
    newId: () => randomUUID(),
    defaultEvent: "Push Hook",
    sample: () => ({ object_kind: "push", ref: "refs/heads/main", checkout_sha: `${short()}${short()}${short().slice(0, 8)}`, project: { path_with_namespace: "group/sample" }, user_username: "sample" }),
  },
  twilio: {
    newId: () => `idem_${short()}`,
    defaultEvent: "sms",
    // Twilio posts a form, not JSON: an incoming SMS.
    sample: () => ({ MessageSid: `SM${short()}${short()}`, AccountSid: "ACsample", From: "+15005550006", To: "+15005550001", Body: "Hello from the sample" }),
  },
};

/**
 * The body text of a sample (a form for Twilio, JSON otherwise).
 * @param {string} provider @param {unknown} sample
 */
export function sampleText(provider, sample) {
  if (provider === "twilio") return new URLSearchParams(/** @type {Record<string, string>} */ (sample)).toString();
  return JSON.stringify(sample);
}
