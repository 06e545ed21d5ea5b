// Every handshake shape, answered in the exact format its provider requires, only once its
// signature (where it has one) checks out, and storing no delivery: JSON echo (Event Grid), text
// echo (Twitch, Graph, Dropbox), Meta's GET, Zoom's computed reply, Discord's PING, the CloudEvents
// OPTIONS, SNS's confirmation (an outbound GET reaching the local backend), and lifecycle messages.
import { createHmac } from "node:crypto";
import { describe, expect, it } from "vitest";
import { sql } from "../../../src/sql";
import { backendCalls, planBackend } from "../../helpers/forward-backend";
import { send } from "../../helpers/catalogue";
import { admin } from "../../http/admin/client";
import { count } from "../../helpers/store-db";
import { b64, ed25519Pair, ed25519Sign, hexOf, rsaSign, throwAwayChain, withHash } from "../../helpers/test-keys";

const uuid = () => crypto.randomUUID();
const now = () => Math.floor(Date.now() / 1000);
/** The provider messages of `source`, counted apart, as GET /admin/sources shows them. */
const messagesOf = async (source: string) => ((await admin("/sources")).json.sources as { source: string; messages: { kind: string; count: number; lastDetail: string }[] }[]).find((entry) => entry.source === source)!.messages;
const rowsOf = (source: string) => count(sql`SELECT COUNT(*) AS n FROM deliveries WHERE source = ${source}`);

describe("handshakes", () => {
  it("Meta: answers the GET hub.challenge as text with the right verify token, 403 with a wrong one", async () => {
    const env = { META_WEBHOOK_SECRET: "meta-app-secret", META_WEBHOOK_VERIFY_TOKEN: "my-verify-token" };
    const path = "?hub.mode=subscribe&hub.challenge=1158201444&hub.verify_token=my-verify-token";
    const answer = await send("meta", { method: "GET", path, env });
    expect([answer.status, answer.text, answer.headers.get("content-type")]).toEqual([200, "1158201444", "text/plain; charset=utf-8"]);
    expect((await send("meta", { method: "GET", path: path.replace("my-verify-token", "guess"), env })).status).toBe(403);
    expect((await send("meta", { method: "GET", path, env: { META_WEBHOOK_SECRET: "meta-app-secret" } })).status).toBe(403);
  });

  it("answers GET with 405 for a source whose provider has no GET handshake, naming what it accepts", async () => {
    const answer = await send("stripe", { method: "GET" });
    expect(answer.status).toBe(405);
    expect(answer.headers.get("allow")).toBe("POST");
  });

  it("Dropbox: echoes the GET challenge as text, nosniff", async () => {
    const answer = await send("dropbox", { method: "GET", path: "?challenge=abc%3Cscript%3E", env: { DROPBOX_WEBHOOK_SECRET: "dropbox-app-secret" } });
    expect([answer.status, answer.text, answer.headers.get("x-content-type-options")]).toEqual([200, "abc<script>", "nosniff"]);
    expect(answer.headers.get("content-type")).toMatch(/^text\/plain/);
  });

  it("Graph: echoes validationToken as text on the POST, and stores nothing", async () => {
    const before = await rowsOf("graph");
    const answer = await send("graph", { path: "?validationToken=Validation%3A%20Testing%20client%20application%20reachability", body: "", env: { GRAPH_WEBHOOK_SECRET: "state" } });
    expect([answer.status, answer.text]).toEqual([200, "Validation: Testing client application reachability"]);
    expect(await rowsOf("graph")).toBe(before);
  });

  it("Graph: a lifecycle notification with the right clientState is answered, not stored", async () => {
    const before = await rowsOf("graph");
    const body = JSON.stringify({ value: [{ subscriptionId: uuid(), lifecycleEvent: "reauthorizationRequired", resource: "users/x/messages", clientState: "state", tenantId: "t" }] });
    const answer = await send("graph", { body, env: { GRAPH_WEBHOOK_SECRET: "state" } });
    expect(answer.json).toMatchObject({ status: "lifecycle", kind: "reauthorizationRequired" });
    expect(await rowsOf("graph")).toBe(before);
    expect(await messagesOf("graph")).toEqual([expect.objectContaining({ kind: "reauthorizationRequired", count: 1 })]);
  });

  const twitchHeaders = (body: string, type: string, secret = "twitch-eventsub-secret") => {
    const id = uuid();
    const stamp = new Date().toISOString();
    return { "twitch-eventsub-message-id": id, "twitch-eventsub-message-timestamp": stamp, "twitch-eventsub-message-type": type, "twitch-eventsub-message-signature": `sha256=${createHmac("sha256", secret).update(id + stamp + body).digest("hex")}` };
  };
  const twitchEnv = { TWITCH_WEBHOOK_SECRET: "twitch-eventsub-secret" };

  it("Twitch: answers webhook_callback_verification with the raw challenge as text, only when signed", async () => {
    const body = JSON.stringify({ challenge: "pogchamp-kappa-360noscope-vohiyo", subscription: { id: uuid(), type: "channel.follow", status: "webhook_callback_verification_pending" } });
    const answer = await send("twitch", { body, headers: twitchHeaders(body, "webhook_callback_verification"), env: twitchEnv });
    expect([answer.status, answer.text]).toEqual([200, "pogchamp-kappa-360noscope-vohiyo"]);
    expect(answer.headers.get("content-type")).toMatch(/^text\/plain/);
    const unsigned = await send("twitch", { body, headers: twitchHeaders(body, "webhook_callback_verification", "not-the-secret"), env: twitchEnv });
    expect(unsigned.status).toBe(401);
  });

  it("Twitch: a revocation is a lifecycle message, answered and never stored", async () => {
    const before = await rowsOf("twitch");
    const body = JSON.stringify({ subscription: { id: uuid(), status: "authorization_revoked", type: "channel.follow" } });
    const answer = await send("twitch", { body, headers: twitchHeaders(body, "revocation"), env: twitchEnv });
    expect(answer.json).toMatchObject({ status: "lifecycle", kind: "revocation" });
    expect(await rowsOf("twitch")).toBe(before);
    expect(await messagesOf("twitch")).toEqual([expect.objectContaining({ kind: "revocation", count: 1, lastDetail: "channel.follow authorization_revoked" })]);
  });

  it("Zoom: answers endpoint.url_validation with plainToken and its hex HMAC under the secret token", async () => {
    const body = JSON.stringify({ payload: { plainToken: "qgg8vlvZRS6UYooatFL8Aw" }, event_ts: 1654503849680, event: "endpoint.url_validation" });
    const t = now();
    const headers = { "x-zm-request-timestamp": String(t), "x-zm-signature": `v0=${createHmac("sha256", "zoom-secret-token").update(`v0:${t}:${body}`).digest("hex")}` };
    const answer = await send("zoom", { body, headers, env: { ZOOM_WEBHOOK_SECRET: "zoom-secret-token" } });
    expect(answer.json).toEqual({ plainToken: "qgg8vlvZRS6UYooatFL8Aw", encryptedToken: createHmac("sha256", "zoom-secret-token").update("qgg8vlvZRS6UYooatFL8Aw").digest("hex") });
  });

  it("Event Grid: answers SubscriptionValidationEvent with validationResponse, and the CloudEvents OPTIONS with WebHook-Allowed-Origin", async () => {
    const env = { EVENTGRID_WEBHOOK_SECRET: "eventgrid-url-key" };
    const body = JSON.stringify([{ id: uuid(), topic: "/subscriptions/x", subject: "", data: { validationCode: "512d38b6-c7b8-40c8-89fe-f46f9e9622b6", validationUrl: "https://rp-eastus2.eventgrid.azure.net:553/eventsubscriptions/x/validate?id=512d38b6" }, eventType: "Microsoft.EventGrid.SubscriptionValidationEvent", eventTime: "2026-12-04T12:00:00Z", metadataVersion: "1", dataVersion: "2" }]);
    const answer = await send("eventgrid", { body, path: "?key=eventgrid-url-key", env });
    expect(answer.json).toEqual({ validationResponse: "512d38b6-c7b8-40c8-89fe-f46f9e9622b6" });
    expect((await send("eventgrid", { body, path: "?key=wrong", env })).status).toBe(401);
    const options = await send("eventgrid", { method: "OPTIONS", headers: { "webhook-request-origin": "eventemitterexample.com" }, env });
    expect([options.status, options.headers.get("webhook-allowed-origin")]).toEqual([200, "eventemitterexample.com"]);
  });

  it("Discord: answers an interaction PING with {\"type\":1} and a Webhook Events PING with 204, once signed", async () => {
    const keys = await ed25519Pair();
    const env = { DISCORD_WEBHOOK_SECRET: hexOf(keys.publicRaw) };
    const signed = async (body: string) => {
      const t = String(now());
      return { "x-signature-timestamp": t, "x-signature-ed25519": hexOf(await ed25519Sign(keys.privateKey, t + body)) };
    };
    const ping = JSON.stringify({ id: uuid(), application_id: "1", type: 1, version: 1, token: "t" });
    const answer = await send("discord", { body: ping, headers: await signed(ping), env });
    expect([answer.status, answer.text, answer.headers.get("content-type")]).toEqual([200, '{"type":1}', "application/json"]);
    const eventsPing = JSON.stringify({ version: 1, application_id: "1", type: 0 });
    expect((await send("discord", { body: eventsPing, headers: await signed(eventsPing), env })).status).toBe(204);
    expect((await send("discord", { body: ping, headers: { ...(await signed(ping)), "x-signature-ed25519": "00".repeat(64) }, env })).status).toBe(401);
  });

  it("SNS: confirms a signed SubscriptionConfirmation by GETting its SubscribeURL (on a test-allowed host), storing nothing", async () => {
    const chain = await throwAwayChain();
    const certUrl = await planBackend(`/certs/confirm-${uuid()}.pem`, { status: 200, body: chain.leafPem });
    const subscribePath = `/sns/confirm-${uuid()}`;
    const subscribeUrl = await planBackend(subscribePath, { status: 200, body: "<ConfirmSubscriptionResponse/>" });
    const topic = "arn:aws:sns:us-west-2:123456789012:MyTopic";
    const message: Record<string, string> = { Type: "SubscriptionConfirmation", MessageId: uuid(), Token: "2336412f37", TopicArn: topic, Message: "You have chosen to subscribe to the topic.", SubscribeURL: `${subscribeUrl}?Action=ConfirmSubscription&Token=2336412f37`, Timestamp: new Date().toISOString() };
    const signed = ["Message", "MessageId", "SubscribeURL", "Timestamp", "Token", "TopicArn", "Type"].map((key) => `${key}\n${message[key]}\n`).join("");
    const body = JSON.stringify({ ...message, SignatureVersion: "1", Signature: b64(await rsaSign(await withHash(chain.signingKey, "SHA-1"), signed)), SigningCertURL: certUrl });
    const env = { SNS_WEBHOOK_SECRET: topic, SNS_WEBHOOK_CA_PEM: chain.caPem, TEST_ONLY_ALLOWED_HOSTS: new URL(certUrl).host };
    const before = await rowsOf("sns");
    const answer = await send("sns", { body, env });
    expect(answer.json).toEqual({ status: "subscription_confirmed" });
    const { calls } = await backendCalls(subscribePath);
    expect(calls.map((call) => [call.method, call.url])).toEqual([["GET", `${subscribePath}?Action=ConfirmSubscription&Token=2336412f37`]]);
    expect(await rowsOf("sns")).toBe(before);
    // Counted apart, so that a user sees it happened: the host only, never the URL's token.
    expect(await messagesOf("sns")).toEqual([expect.objectContaining({ kind: "SubscriptionConfirmation", count: 1, lastDetail: `confirmed at ${new URL(subscribeUrl).host}` })]);
    // The same confirmation unsigned (another key) is refused, and nothing is fetched.
    const forged = body.replace(/"Signature":"[^"]+"/, `"Signature":"${b64(new Uint8Array(256))}"`);
    expect((await send("sns", { body: forged, env })).status).toBe(401);
    expect((await backendCalls(subscribePath)).calls).toHaveLength(1);
  });

  it("Slack: answers url_verification with the challenge as JSON", async () => {
    const body = JSON.stringify({ token: "Jhj5dZrVaK7ZwHHjRyZWjbDl", challenge: "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P", type: "url_verification" });
    const t = String(now());
    const secret = "8f742231b10e8888abcd99yyyzzz85a5";
    const headers = { "x-slack-request-timestamp": t, "x-slack-signature": `v0=${createHmac("sha256", secret).update(`v0:${t}:${body}`).digest("hex")}`, "content-type": "application/json" };
    const answer = await send("slack", { body, headers });
    expect([answer.status, answer.text, answer.headers.get("content-type")]).toEqual([200, JSON.stringify({ challenge: "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P" }), "application/json"]);
  });
});
