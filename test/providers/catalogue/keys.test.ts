// The catalogue's providers signed with key pairs (Discord, Telnyx: Ed25519; SendGrid: ECDSA P-256,
// a batch) and tokens (Netlify's HS256 JWS, Pub/Sub's RS256 OIDC token from a JWKS served by a
// local server): keys made in the test, tokens assembled here.
import { createHmac } from "node:crypto";
import { describe, expect, it } from "vitest";
import { planBackend } from "../../helpers/forward-backend";
import { providerCases, randomBase64, randomHex, send, type Signed } from "../../helpers/catalogue";
import { b64, ed25519Pair, ed25519Sign, hexOf, jwt, p256Pair, p256SignDer, rsaPair } from "../../helpers/test-keys";

const uuid = () => crypto.randomUUID();
const discordKeys = await ed25519Pair();
const discordOther = await ed25519Pair();
const telnyxKeys = await ed25519Pair();
const telnyxOther = await ed25519Pair();
const sendgridKeys = await p256Pair();
const sendgridOther = await p256Pair();
const tamperBody = (body: string, signed: Signed) => ({ body: body.replace("{", "{ "), signed });
const forge = (name: string, make: () => string) => (signed: Signed): Signed => ({ ...signed, headers: { ...signed.headers, [name]: make() } });

describe("catalogue: discord", () =>
  providerCases({
    source: "discord",
    secret: hexOf(discordKeys.publicRaw),
    signWith: discordKeys.privateKey,
    wrongSigner: discordOther.privateKey,
    body: () => JSON.stringify({ version: 1, application_id: "1234560123453231555", type: 1, event: { type: "APPLICATION_AUTHORIZED", timestamp: new Date().toISOString(), data: { user: { id: uuid() }, scopes: ["applications.commands"] } } }),
    sign: async (body, key, t) => ({ headers: { "x-signature-timestamp": String(t), "x-signature-ed25519": hexOf(await ed25519Sign(key as CryptoKey, `${t}${body}`)) } }),
    tamper: tamperBody,
    forge: forge("x-signature-ed25519", () => randomHex(64)),
    timestamped: true,
    // Discord's Webhook Events want 204 No Content.
    okStatus: 204,
  }));

describe("catalogue: telnyx", () =>
  providerCases({
    source: "telnyx",
    secret: b64(telnyxKeys.publicRaw),
    signWith: telnyxKeys.privateKey,
    wrongSigner: telnyxOther.privateKey,
    body: () => JSON.stringify({ data: { event_type: "message.received", id: uuid(), occurred_at: "2026-12-04T12:00:00.000+00:00", payload: { text: "Hello", to: [{ phone_number: "+13125550001" }] }, record_type: "event" }, meta: { attempt: 1 } }),
    sign: async (body, key, t) => ({ headers: { "telnyx-timestamp": String(t), "telnyx-signature-ed25519": b64(await ed25519Sign(key as CryptoKey, `${t}|${body}`)) } }),
    tamper: tamperBody,
    forge: forge("telnyx-signature-ed25519", () => randomBase64(64)),
    timestamped: true,
    expectedId: (body) => JSON.parse(body).data.id,
  }));

const sendgridEvents = () => [
  { email: "example@test.com", timestamp: 1733313600, "smtp-id": "<14c5d75ce93.dfd.64b469@ismtpd-555>", event: "processed", sg_event_id: uuid(), sg_message_id: "14c5d75ce93.dfd.64b469.filter0001.16648.5515E0B88.0" },
  { email: "example@test.com", timestamp: 1733313601, event: "delivered", response: "250 OK", sg_event_id: uuid(), sg_message_id: "14c5d75ce93.dfd.64b469.filter0001.16648.5515E0B88.0" },
];

describe("catalogue: sendgrid (a batch: each event its own delivery)", () =>
  providerCases({
    source: "sendgrid",
    secret: b64(sendgridKeys.publicSpki),
    signWith: sendgridKeys.privateKey,
    wrongSigner: sendgridOther.privateKey,
    body: () => JSON.stringify(sendgridEvents()),
    sign: async (body, key, t) => ({ headers: { "x-twilio-email-event-webhook-timestamp": String(t), "x-twilio-email-event-webhook-signature": b64(await p256SignDer(key as CryptoKey, `${t}${body}`)) } }),
    tamper: tamperBody,
    forge: forge("x-twilio-email-event-webhook-signature", () => randomBase64(70)),
    timestamped: true,
    events: (body) => (JSON.parse(body) as { sg_event_id: string }[]).map((event) => ({ id: event.sg_event_id, bytes: JSON.stringify(event) })),
  }));

describe("catalogue: sendgrid's batch", () => {
  it("stores an event sent again in a later batch once, and the new one beside it", async () => {
    const [first, second] = sendgridEvents();
    const vars = { SENDGRID_WEBHOOK_SECRET: b64(sendgridKeys.publicSpki) };
    const post = async (events: unknown[]) => {
      const body = `[${events.map((event) => JSON.stringify(event)).join(",\n ")}]`;
      const t = Math.floor(Date.now() / 1000);
      const headers = { "x-twilio-email-event-webhook-timestamp": String(t), "x-twilio-email-event-webhook-signature": b64(await p256SignDer(sendgridKeys.privateKey, `${t}${body}`)) };
      return send("sendgrid", { body, headers, env: vars });
    };
    expect((await post([first])).json?.events).toEqual([{ id: first!.sg_event_id, status: "stored" }]);
    const again = await post([first, second]);
    expect(again.json).toMatchObject({ status: "stored", events: [{ id: first!.sg_event_id, status: "duplicate" }, { id: second!.sg_event_id, status: "stored" }] });
  });
});

const NETLIFY_SECRET = "netlify-jws-secret";
const sha256Hex = async (text: string) => hexOf(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text)));

describe("catalogue: netlify (a JWS whose sha256 claim signs the body)", () =>
  providerCases({
    source: "netlify",
    secret: NETLIFY_SECRET,
    body: () => JSON.stringify({ id: uuid(), site_id: "2c5cf5a5-d1b4-4d4b-b0b5-5d3f0c9c4a1e", state: "ready", name: "my-site", updated_at: new Date().toISOString() }),
    sign: async (body, key, t) => ({ headers: { "x-webhook-signature": await jwt({ alg: "HS256", typ: "JWT" }, { iss: "netlify", sha256: await sha256Hex(body), iat: t, exp: t + 300 }, key as string) } }),
    tamper: tamperBody,
    forge: (signed) => ({ headers: { "x-webhook-signature": signed.headers["x-webhook-signature"]!.replace(/\.[^.]+$/, `.${randomBase64(32).replaceAll("+", "-").replaceAll("/", "_").replace(/=+$/, "")}`) } }),
    timestamped: true,
  }));

const googleKeys = await rsaPair();
const otherGoogleKeys = await rsaPair();
const jwk = { ...(await crypto.subtle.exportKey("jwk", googleKeys.publicKey)), kid: "test-key-1", alg: "RS256", use: "sig" };
const jwksUrl = await planBackend("/pubsub/jwks", { status: 200, headers: { "content-type": "application/json" }, body: JSON.stringify({ keys: [jwk] }) });
const AUDIENCE = "https://inbox.example.com/webhooks/pubsub";
const SERVICE_ACCOUNT = "push@project.iam.gserviceaccount.com";

describe("catalogue: pubsub (an OIDC token from a JWKS on a test-allowed local host)", () =>
  providerCases({
    source: "pubsub",
    secret: AUDIENCE,
    signWith: googleKeys.privateKey,
    wrongSigner: otherGoogleKeys.privateKey,
    env: { PUBSUB_WEBHOOK_JWKS_URL: jwksUrl, PUBSUB_WEBHOOK_SERVICE_ACCOUNT: SERVICE_ACCOUNT, TEST_ONLY_ALLOWED_HOSTS: new URL(jwksUrl).host },
    body: () => JSON.stringify({ message: { attributes: { eventType: "OBJECT_FINALIZE" }, data: btoa("hello"), messageId: uuid(), publishTime: "2026-12-04T12:00:00.000Z" }, subscription: "projects/myproject/subscriptions/mysubscription" }),
    sign: async (_body, key, t) => ({
      headers: { authorization: `Bearer ${await jwt({ alg: "RS256", kid: "test-key-1", typ: "JWT" }, { iss: "https://accounts.google.com", aud: AUDIENCE, email: SERVICE_ACCOUNT, email_verified: true, iat: t, exp: t + 600 }, key as CryptoKey)}` },
    }),
    // The token covers no body: the tampered field is the token's audience.
    tamper: (body, signed) => ({ body, signed: { headers: { authorization: signed.headers.authorization!.replace(/^Bearer [^.]+\.[^.]+/, (head) => head.slice(0, -2) + "xy") } } }),
    forge: (signed) => ({ headers: { authorization: signed.headers.authorization!.replace(/\.[^.]+$/, `.${randomBase64(256).replaceAll("+", "-").replaceAll("/", "_").replace(/=+$/, "")}`) } }),
    timestamped: true,
    expectedId: (body) => JSON.parse(body).message.messageId,
  }));

describe("catalogue: pubsub's settings", () => {
  it("refuses a token for another service account, and a JWKS URL that is not allow-listed", async () => {
    const t = Math.floor(Date.now() / 1000);
    const body = JSON.stringify({ message: { messageId: uuid(), data: "" }, subscription: "s" });
    const token = await jwt({ alg: "RS256", kid: "test-key-1" }, { iss: "https://accounts.google.com", aud: AUDIENCE, email: "someone@else.iam.gserviceaccount.com", iat: t, exp: t + 3600 }, googleKeys.privateKey);
    const env = { PUBSUB_WEBHOOK_SECRET: AUDIENCE, PUBSUB_WEBHOOK_JWKS_URL: jwksUrl, PUBSUB_WEBHOOK_SERVICE_ACCOUNT: SERVICE_ACCOUNT, TEST_ONLY_ALLOWED_HOSTS: new URL(jwksUrl).host };
    expect((await send("pubsub", { body, headers: { authorization: `Bearer ${token}` }, env })).json?.message).toMatch(/email claim mismatch/);
    const { TEST_ONLY_ALLOWED_HOSTS: _, ...strict } = env;
    expect((await send("pubsub", { body, headers: { authorization: `Bearer ${token}` }, env: strict })).json?.message).toMatch(/allow-list/);
  });
});

// Keeps node:crypto's HMAC imported for symmetry with the other signer files (Netlify's JWS above is by Web Crypto).
void createHmac;
