// The catalogue's HMAC providers, each signed by an implementation written here with node:crypto
// from the provider's docs (src/providers is never the oracle), with bodies shaped as in the docs.
import { createHmac } from "node:crypto";
import { describe, expect, it } from "vitest";
import { BASE_URL } from "../../helpers/signers";
import { providerCases, send, randomBase64, randomHex, type ProviderCase, type Signed } from "../../helpers/catalogue";

type Alg = "sha1" | "sha256";
const mac = (alg: Alg, key: string | Buffer, data: string) => createHmac(alg, key).update(data, "utf8").digest();
const uuid = () => crypto.randomUUID();
const iso = (seconds: number) => new Date(seconds * 1000).toISOString();

/** Replaces header `name`'s signature with random bytes of the same encoding. */
const forge = (name: string, make: () => string) => (signed: Signed): Signed => ({ ...signed, headers: { ...signed.headers, [name]: make() } });
/** Adds a space inside the JSON: the same meaning, other bytes, so a signature over the body fails. */
const tamperBody = (body: string, signed: Signed) => ({ body: body.replace("{", "{ "), signed });
const jsonId = (path: string) => (body: string) => path.split(".").reduce((value: any, key) => value[key], JSON.parse(body)) as string;

const cases: ProviderCase[] = [
  {
    source: "square",
    secret: "square-signature-key",
    body: () => JSON.stringify({ merchant_id: "6SSW7HV8K2ST5", type: "payment.updated", event_id: uuid(), created_at: "2026-12-04T12:00:00Z", data: { type: "payment", id: "KkAkhdMs", object: { payment: { id: "KkAkhdMs", amount_money: { amount: 100, currency: "USD" } } } } }),
    sign: (body, key, _t) => ({ headers: { "x-square-hmacsha256-signature": mac("sha256", key as string, `${BASE_URL}/webhooks/square${body}`).toString("base64") } }),
    tamper: tamperBody,
    forge: forge("x-square-hmacsha256-signature", () => randomBase64(32)),
    timestamped: false,
    expectedId: jsonId("event_id"),
  },
  {
    source: "paddle",
    secret: "pdl_ntfset_01h_secret",
    body: () => JSON.stringify({ event_id: `evt_${uuid()}`, event_type: "transaction.completed", occurred_at: "2026-12-04T12:00:00.000Z", notification_id: `ntf_${uuid()}`, data: { id: "txn_01h", status: "completed" } }),
    sign: (body, key, t) => ({ headers: { "paddle-signature": `ts=${t};h1=${mac("sha256", key as string, `${t}:${body}`).toString("hex")}` } }),
    tamper: tamperBody,
    forge: (signed) => ({ headers: { "paddle-signature": signed.headers["paddle-signature"]!.replace(/h1=.*/, `h1=${randomHex(32)}`) } }),
    timestamped: true,
    expectedId: jsonId("event_id"),
  },
  {
    source: "lemonsqueezy",
    secret: "lemon-signing-secret",
    body: () => JSON.stringify({ meta: { event_name: "order_created", custom_data: { customer_id: 25 } }, data: { type: "orders", id: uuid(), attributes: { store_id: 1, total: 999, updated_at: "2026-12-04T12:00:00.000000Z" } } }),
    sign: (body, key) => ({ headers: { "x-signature": mac("sha256", key as string, body).toString("hex"), "x-event-name": "order_created" } }),
    tamper: tamperBody,
    forge: forge("x-signature", () => randomHex(32)),
    timestamped: false,
  },
  {
    source: "mollie",
    secret: "mollie-webhook-secret",
    body: () => JSON.stringify({ resource: "event", id: `event_${uuid()}`, type: "payment-link.paid", entityId: "pl_4Y0eZitmBnQ6IDoMqZQKh", createdAt: "2026-12-04T12:00:00+00:00" }),
    sign: (body, key) => ({ headers: { "x-mollie-signature": `sha256=${mac("sha256", key as string, body).toString("hex")}` } }),
    tamper: tamperBody,
    forge: forge("x-mollie-signature", () => `sha256=${randomHex(32)}`),
    timestamped: false,
    expectedId: jsonId("id"),
  },
  {
    source: "coinbase",
    secret: "coinbase-shared-secret",
    body: () => JSON.stringify({ id: 1, scheduled_for: "2026-12-04T12:00:00Z", event: { id: uuid(), resource: "event", type: "charge:confirmed", api_version: "2018-03-22", data: { code: "66BEOV2A" } } }),
    sign: (body, key) => ({ headers: { "x-cc-webhook-signature": mac("sha256", key as string, body).toString("hex") } }),
    tamper: tamperBody,
    forge: forge("x-cc-webhook-signature", () => randomHex(32)),
    timestamped: false,
    expectedId: jsonId("event.id"),
  },
  {
    source: "jira",
    secret: "jira-webhook-secret",
    body: () => JSON.stringify({ timestamp: 1733313600000, webhookEvent: "jira:issue_updated", issue: { id: uuid(), key: "JRA-20002" } }),
    sign: (body, key) => ({ headers: { "x-hub-signature": `sha256=${mac("sha256", key as string, body).toString("hex")}`, "x-atlassian-webhook-identifier": uuid() } }),
    tamper: tamperBody,
    forge: forge("x-hub-signature", () => `sha256=${randomHex(32)}`),
    timestamped: false,
    expectedId: (_body, signed) => signed.headers["x-atlassian-webhook-identifier"]!,
  },
  {
    source: "bitbucket",
    secret: "bitbucket-secret",
    body: () => JSON.stringify({ push: { changes: [{ new: { name: "main", target: { hash: uuid() } } }] }, repository: { full_name: "team/repo" } }),
    sign: (body, key) => ({ headers: { "x-hub-signature": `sha256=${mac("sha256", key as string, body).toString("hex")}`, "x-request-uuid": uuid(), "x-event-key": "repo:push" } }),
    tamper: tamperBody,
    forge: forge("x-hub-signature", () => `sha256=${randomHex(32)}`),
    timestamped: false,
    expectedId: (_body, signed) => signed.headers["x-request-uuid"]!,
  },
  {
    source: "linear",
    secret: "lin_wh_secret",
    body: () => JSON.stringify({ action: "create", type: "Issue", data: { id: uuid(), title: "Bug" }, url: "https://linear.app/issue/LIN-1", webhookTimestamp: Date.now() }),
    sign: (body, key) => ({ headers: { "linear-signature": mac("sha256", key as string, body).toString("hex"), "linear-delivery": uuid() } }),
    tamper: tamperBody,
    forge: forge("linear-signature", () => randomHex(32)),
    // Linear's timestamp is inside the signed body: its own test below.
    timestamped: false,
    expectedId: (_body, signed) => signed.headers["linear-delivery"]!,
  },
  {
    source: "sentry",
    secret: "sentry-client-secret",
    body: () => JSON.stringify({ action: "created", installation: { uuid: uuid() }, data: { issue: { id: "1170820242" } }, actor: { type: "application" } }),
    sign: (body, key) => ({ headers: { "sentry-hook-signature": mac("sha256", key as string, body).toString("hex"), "request-id": uuid(), "sentry-hook-resource": "issue" } }),
    tamper: tamperBody,
    forge: forge("sentry-hook-signature", () => randomHex(32)),
    timestamped: false,
    expectedId: (_body, signed) => signed.headers["request-id"]!,
  },
  {
    source: "vercel",
    secret: "vercel-client-secret",
    body: () => JSON.stringify({ id: uuid(), type: "deployment.created", createdAt: 1733313600000, payload: { deployment: { id: "dpl_2" } } }),
    sign: (body, key) => ({ headers: { "x-vercel-signature": mac("sha1", key as string, body).toString("hex") } }),
    tamper: tamperBody,
    forge: forge("x-vercel-signature", () => randomHex(20)),
    timestamped: false,
    expectedId: jsonId("id"),
  },
  {
    source: "pagerduty",
    secret: "pagerduty-secret",
    body: () => JSON.stringify({ event: { id: uuid(), event_type: "incident.triggered", resource_type: "incident", occurred_at: "2026-12-04T12:00:00.000Z", data: { id: "PGR0VU2" } } }),
    sign: (body, key) => ({ headers: { "x-pagerduty-signature": `v1=${mac("sha256", `${key}`, body).toString("hex")},v1=${randomHex(32)}` } }),
    tamper: tamperBody,
    forge: forge("x-pagerduty-signature", () => `v1=${randomHex(32)}`),
    timestamped: false,
    expectedId: jsonId("event.id"),
  },
  {
    source: "circleci",
    secret: "circleci-secret",
    body: () => JSON.stringify({ id: uuid(), type: "workflow-completed", happened_at: "2026-12-04T12:00:00.000Z", workflow: { id: "fda08377", status: "success" } }),
    sign: (body, key) => ({ headers: { "circleci-signature": `v1=${mac("sha256", key as string, body).toString("hex")}` } }),
    tamper: tamperBody,
    forge: forge("circleci-signature", () => `v1=${randomHex(32)}`),
    timestamped: false,
    expectedId: jsonId("id"),
  },
  {
    source: "gitea",
    secret: "gitea-secret",
    body: () => JSON.stringify({ ref: "refs/heads/main", after: uuid(), repository: { full_name: "gitea/webhooks" } }),
    sign: (body, key) => ({ headers: { "x-gitea-signature": mac("sha256", key as string, body).toString("hex"), "x-gitea-delivery": uuid(), "x-gitea-event": "push" } }),
    tamper: tamperBody,
    forge: forge("x-gitea-signature", () => randomHex(32)),
    timestamped: false,
    expectedId: (_body, signed) => signed.headers["x-gitea-delivery"]!,
  },
  {
    source: "zoom",
    secret: "zoom-secret-token",
    body: () => JSON.stringify({ event: "meeting.started", event_ts: Date.now(), payload: { account_id: "AAAAAABBBB", object: { id: "1234567890", uuid: uuid(), topic: "My Meeting" } } }),
    sign: (body, key, t) => ({ headers: { "x-zm-request-timestamp": String(t), "x-zm-signature": `v0=${mac("sha256", key as string, `v0:${t}:${body}`).toString("hex")}` } }),
    tamper: tamperBody,
    forge: forge("x-zm-signature", () => `v0=${randomHex(32)}`),
    timestamped: true,
  },
  {
    source: "twitch",
    secret: "twitch-eventsub-secret",
    body: () => JSON.stringify({ subscription: { id: uuid(), type: "channel.follow", version: "2", status: "enabled" }, event: { user_id: "1337", broadcaster_user_id: "1337" } }),
    sign: (body, key, t) => {
      const id = uuid();
      const stamp = iso(t);
      return { headers: { "twitch-eventsub-message-id": id, "twitch-eventsub-message-timestamp": stamp, "twitch-eventsub-message-type": "notification", "twitch-eventsub-message-signature": `sha256=${mac("sha256", key as string, id + stamp + body).toString("hex")}` } };
    },
    tamper: (body, signed) => ({ body, signed: { headers: { ...signed.headers, "twitch-eventsub-message-id": uuid() } } }),
    forge: forge("twitch-eventsub-message-signature", () => `sha256=${randomHex(32)}`),
    timestamped: true,
    expectedId: (_body, signed) => signed.headers["twitch-eventsub-message-id"]!,
  },
  {
    source: "meta",
    secret: "meta-app-secret",
    body: () => JSON.stringify({ object: "whatsapp_business_account", entry: [{ id: "102290129340398", changes: [{ field: "messages", value: { messages: [{ id: `wamid.${uuid()}`, type: "text", text: { body: "hi" } }] } }] }] }),
    sign: (body, key) => ({ headers: { "x-hub-signature-256": `sha256=${mac("sha256", key as string, body).toString("hex")}` } }),
    tamper: tamperBody,
    forge: forge("x-hub-signature-256", () => `sha256=${randomHex(32)}`),
    timestamped: false,
  },
  {
    source: "intercom",
    secret: "intercom-client-secret",
    body: () => JSON.stringify({ type: "notification_event", app_id: "a86dr8yl", id: `notif_${uuid()}`, topic: "conversation.user.created", created_at: 1733313600, data: { item: { type: "conversation" } } }),
    sign: (body, key) => ({ headers: { "x-hub-signature": `sha1=${mac("sha1", key as string, body).toString("hex")}` } }),
    tamper: tamperBody,
    forge: forge("x-hub-signature", () => `sha1=${randomHex(20)}`),
    timestamped: false,
    expectedId: jsonId("id"),
  },
  {
    source: "typeform",
    secret: "typeform-secret",
    body: () => JSON.stringify({ event_id: uuid(), event_type: "form_response", form_response: { form_id: "lT4Z3j", token: "a3a12ec67a1365927098a606107fac15", submitted_at: "2026-12-04T12:00:00Z" } }),
    sign: (body, key) => ({ headers: { "typeform-signature": `sha256=${mac("sha256", key as string, body).toString("base64")}` } }),
    tamper: tamperBody,
    forge: forge("typeform-signature", () => `sha256=${randomBase64(32)}`),
    timestamped: false,
    expectedId: jsonId("event_id"),
  },
  {
    source: "calendly",
    secret: "calendly-signing-key",
    body: () => JSON.stringify({ created_at: new Date().toISOString(), created_by: "https://api.calendly.com/users/AAAA", event: "invitee.created", payload: { uri: `https://api.calendly.com/scheduled_events/${uuid()}/invitees/BBBB`, email: "test@example.com" } }),
    sign: (body, key, t) => ({ headers: { "calendly-webhook-signature": `t=${t},v1=${mac("sha256", key as string, `${t}.${body}`).toString("hex")}` } }),
    tamper: tamperBody,
    forge: (signed) => ({ headers: { "calendly-webhook-signature": signed.headers["calendly-webhook-signature"]!.replace(/v1=.*/, `v1=${randomHex(32)}`) } }),
    timestamped: true,
  },
  {
    source: "docusign",
    secret: "docusign-connect-key",
    body: () => JSON.stringify({ event: "envelope-completed", apiVersion: "v2.1", uri: "/restapi/v2.1/accounts/1/envelopes/2", generatedDateTime: new Date().toISOString(), data: { accountId: "1", envelopeId: uuid() } }),
    sign: (body, key) => ({ headers: { "x-docusign-signature-1": mac("sha256", key as string, body).toString("base64") } }),
    tamper: tamperBody,
    forge: forge("x-docusign-signature-1", () => randomBase64(32)),
    timestamped: false,
  },
  {
    source: "mux",
    secret: "mux-signing-secret",
    body: () => JSON.stringify({ type: "video.asset.ready", id: uuid(), created_at: "2026-12-04T12:00:00.000000Z", object: { type: "asset", id: "0201p02fGKPE7MrbC269XRD7LpcHhrmbu0002" } }),
    sign: (body, key, t) => ({ headers: { "mux-signature": `t=${t},v1=${mac("sha256", key as string, `${t}.${body}`).toString("hex")}` } }),
    tamper: tamperBody,
    forge: (signed) => ({ headers: { "mux-signature": signed.headers["mux-signature"]!.replace(/v1=.*/, `v1=${randomHex(32)}`) } }),
    timestamped: true,
    expectedId: jsonId("id"),
  },
];

for (const spec of cases) describe(`catalogue: ${spec.source}`, () => providerCases(spec));

describe("catalogue: linear's signed webhookTimestamp", () => {
  it("refuses a body whose webhookTimestamp is more than 60 s away, either way, though signed", async () => {
    for (const at of [Date.now() - 120_000, Date.now() + 120_000]) {
      const body = JSON.stringify({ action: "create", type: "Issue", data: { id: uuid() }, webhookTimestamp: at });
      const headers = { "linear-signature": mac("sha256", "lin_wh_secret", body).toString("hex"), "linear-delivery": uuid() };
      const answer = await send("linear", { body, headers, env: { LINEAR_WEBHOOK_SECRET: "lin_wh_secret" } });
      expect(answer.status).toBe(401);
      expect(answer.json?.message).toMatch(/timestamp/);
    }
  });
});
