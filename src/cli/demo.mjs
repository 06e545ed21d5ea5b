#!/usr/bin/env node
/**
 * `npm run demo`: the seed's walkthrough against the local inbox (`npm run dev` in another
 * terminal), signed like Stripe with stripe-node's own test signer: the same payment three times,
 * a second payment, and a broken one without an amount. It prints what the inbox answered to
 * each send, waits for processing to settle, and prints the counts from the admin API.
 *
 * Settings: INBOX_URL (default: the URL `npm run dev` announced, else http://localhost:8787);
 * STRIPE_WEBHOOK_SECRET and ADMIN_TOKEN (or INBOX_ADMIN_TOKEN) from the environment, else
 * .dev.vars, else .dev.vars.example: the same as the CLI (lib/local-inbox.mjs).
 */
import { fileURLToPath } from "node:url";
import Stripe from "stripe";
import { createAdminClient, InboxError } from "./lib/admin-client.mjs";
import { devVar } from "./lib/dev-vars.mjs";
import { duration, table } from "./lib/format.mjs";
import { devUrl, DEFAULT_URL } from "./lib/local-inbox.mjs";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const SETTLE_TIMEOUT_MS = 60_000;

/** A Stripe `payment_intent.succeeded` event; without `amount` it is the broken one. */
function paymentEvent(id, customer, amount) {
  /** @type {Record<string, unknown>} */
  const intent = { id: `pi_${id}`, object: "payment_intent", currency: "usd", customer };
  if (amount !== undefined) intent.amount = amount;
  return { id, object: "event", type: "payment_intent.succeeded", created: Math.floor(Date.now() / 1000), data: { object: intent } };
}

async function main() {
  const url = (process.env.INBOX_URL ?? devUrl(ROOT) ?? DEFAULT_URL).replace(/\/+$/, "");
  // Several secrets may be configured during a rotation; any one of them signs.
  const secret = devVar(ROOT, "STRIPE_WEBHOOK_SECRET"); // one secret, taken verbatim (src/config/secrets.ts)
  const token = process.env.INBOX_ADMIN_TOKEN ?? devVar(ROOT, "ADMIN_TOKEN");
  if (!secret) throw new InboxError("no STRIPE_WEBHOOK_SECRET in the environment, .dev.vars or .dev.vars.example");
  if (!token) throw new InboxError("no admin token: set INBOX_ADMIN_TOKEN, or ADMIN_TOKEN in .dev.vars");

  // Fresh ids per run, so that a second run shows the same story rather than five duplicates.
  const run = Date.now().toString(36);
  const [maria, sam, eve] = [`evt_${run}_100`, `evt_${run}_101`, `evt_${run}_102`];
  const sends = [
    paymentEvent(maria, "cus_maria_lopez", 2_499),
    paymentEvent(maria, "cus_maria_lopez", 2_499), // the provider retried: the same delivery again
    paymentEvent(sam, "cus_sam_okafor", 1_250),
    paymentEvent(maria, "cus_maria_lopez", 2_499), // and again
    paymentEvent(eve, "cus_eve", undefined), // broken: no amount
  ];

  console.log(`sending to ${url}/webhooks/stripe, signed like Stripe:\n`);
  for (const event of sends) {
    const payload = JSON.stringify(event);
    const signature = await Stripe.webhooks.generateTestHeaderStringAsync({ payload, secret });
    const answer = await post(`${url}/webhooks/stripe`, payload, { "content-type": "application/json", "stripe-signature": signature });
    console.log(`${event.id}: ${answer.status ?? answer.error}`);
  }

  const admin = createAdminClient({ url, token });
  console.log("\nwaiting for processing to settle…\n");
  const outcomes = await settle(admin, [maria, sam, eve]);
  for (const delivery of outcomes) {
    console.log(`${delivery.id} ${delivery.status}${delivery.error ? `: ${delivery.error}` : ""}`);
  }

  const stats = await admin.get("/stats");
  console.log(`\n${table(["STATUS", "COUNT"], Object.entries(stats.counts))}\n\noldest waiting: ${duration(stats.oldestWaitingSeconds)}`);
  console.log(`\nnext: npx webhook-inbox list --status failed, then show / replay (docs/operations.md)`);
}

/** POSTs a delivery; a refusal is explained in one line. */
async function post(url, body, headers) {
  let response;
  try {
    response = await fetch(url, { method: "POST", body, headers, signal: AbortSignal.timeout(15_000) });
  } catch {
    throw new InboxError(`cannot reach the inbox at ${url}: is \`npm run dev\` running? (or set INBOX_URL)`);
  }
  const json = await response.json().catch(() => ({}));
  if (response.ok) return json;
  if (json.error === "source_not_configured") {
    throw new InboxError("the inbox has no STRIPE_WEBHOOK_SECRET: add it to .dev.vars (see .dev.vars.example) and restart `npm run dev`");
  }
  if (json.error === "invalid_signature") {
    throw new InboxError("the inbox refused the signature: its STRIPE_WEBHOOK_SECRET differs from the one the demo used (set STRIPE_WEBHOOK_SECRET)");
  }
  throw new InboxError(`the inbox answered ${response.status} ${json.error ?? ""}: ${json.message ?? ""}`.trim());
}

/** Polls each delivery until it is done or failed; returns them in order. */
async function settle(admin, ids) {
  const deadline = Date.now() + SETTLE_TIMEOUT_MS;
  for (;;) {
    const deliveries = await Promise.all(ids.map((id) => admin.get(`/deliveries/stripe/${encodeURIComponent(id)}`)));
    if (deliveries.every((delivery) => delivery.status === "done" || delivery.status === "failed")) return deliveries;
    if (Date.now() > deadline) {
      console.log(`not settled after ${SETTLE_TIMEOUT_MS / 1000} s; showing where things stand`);
      return deliveries;
    }
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
}

main().catch((error) => {
  console.error(`demo: ${error instanceof InboxError ? error.message : error instanceof Error ? error.stack : String(error)}`);
  process.exitCode = 1;
});
