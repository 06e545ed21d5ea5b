/**
 * Every handshake shape end to end through `wrangler dev`, from outside, as the providers send
 * them: Meta's GET, SNS's SubscriptionConfirmation (the runtime GETs SubscribeURL from a local
 * server, whose certificate comes from a throw-away CA made here with openssl), Twitch's text
 * challenge, Zoom's computed reply, Discord's PING, Event Grid's validation, Graph's
 * validationToken, Dropbox's GET challenge, Adyen's "[accepted]". Each stores no delivery.
 */
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { createHmac, createPrivateKey, createSign, generateKeyPairSync, randomUUID, sign } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { LocalInbox } from "./harness.mjs";

/** A throw-away CA and a leaf it issued, by openssl, in a temporary directory. */
function throwAwayChain() {
  const dir = mkdtempSync(join(tmpdir(), "e2e-ca-"));
  const openssl = (...args) => execFileSync("openssl", args, { cwd: dir, stdio: "pipe" });
  openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.pem", "-days", "2", "-subj", "/CN=e2e throw-away CA");
  openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "leaf.key", "-out", "leaf.csr", "-subj", "/CN=sns.e2e");
  openssl("x509", "-req", "-in", "leaf.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial", "-out", "leaf.pem", "-days", "1");
  const read = (name) => readFileSync(join(dir, name), "utf8");
  const chain = { caPem: read("ca.pem"), leafPem: read("leaf.pem"), leafKey: createPrivateKey(read("leaf.key")) };
  rmSync(dir, { recursive: true, force: true });
  return chain;
}

const TOPIC = "arn:aws:sns:us-west-2:123456789012:E2ETopic";
const chain = throwAwayChain();
const discord = generateKeyPairSync("ed25519");
const discordPublicHex = Buffer.from(discord.publicKey.export({ format: "jwk" }).x, "base64url").toString("hex");
const ADYEN_KEY = "44782DEF547AAA06C910C43932B1EB0C71FC68D9D0C057550C48EC2ACF6BA056";

/** The local server the runtime may reach: the SNS certificate, and the SubscribeURL, whose calls it records. */
const calls = [];
const server = createServer((request, response) => {
  calls.push({ method: request.method, url: request.url });
  if (request.url.startsWith("/cert.pem")) return response.end(chain.leafPem);
  if (request.url.startsWith("/confirm")) return response.end("<ConfirmSubscriptionResponse/>");
  response.writeHead(404).end();
});
await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
const serverHost = `127.0.0.1:${server.address().port}`;

const inbox = new LocalInbox({
  vars: {
    META_WEBHOOK_SECRET: "e2e-meta-app-secret",
    META_WEBHOOK_VERIFY_TOKEN: "e2e-verify-token",
    SNS_WEBHOOK_SECRET: TOPIC,
    // dotenv reads \n in a double-quoted value as a newline: the PEM arrives whole.
    SNS_WEBHOOK_CA_PEM: JSON.stringify(chain.caPem),
    TEST_ONLY_ALLOWED_HOSTS: serverHost,
    TWITCH_WEBHOOK_SECRET: "e2e-twitch-secret",
    ZOOM_WEBHOOK_SECRET: "e2e-zoom-secret",
    DISCORD_WEBHOOK_SECRET: discordPublicHex,
    EVENTGRID_WEBHOOK_SECRET: "e2e-eventgrid-key",
    GRAPH_WEBHOOK_SECRET: "e2e-graph-state",
    DROPBOX_WEBHOOK_SECRET: "e2e-dropbox-secret",
    ADYEN_WEBHOOK_SECRET: ADYEN_KEY,
  },
});

async function request(path, init = {}) {
  const response = await fetch(`${inbox.url}${path}`, init);
  return { status: response.status, text: await response.text(), headers: response.headers };
}

const rows = async (source) => (await inbox.sql(`SELECT COUNT(*) AS n FROM deliveries WHERE source = '${source}'`))[0].n;

describe("handshakes through wrangler dev", () => {
  before(() => inbox.start(), { timeout: 120_000 });
  after(async () => {
    await inbox.stop();
    server.close();
  });

  it("Meta: GET hub.challenge echoed as text for the verify token, 403 for another", async () => {
    const ok = await request("/webhooks/meta?hub.mode=subscribe&hub.challenge=1158201444&hub.verify_token=e2e-verify-token");
    assert.deepEqual([ok.status, ok.text, ok.headers.get("content-type")], [200, "1158201444", "text/plain; charset=utf-8"]);
    assert.equal((await request("/webhooks/meta?hub.mode=subscribe&hub.challenge=1&hub.verify_token=guess")).status, 403);
  });

  it("SNS: a signed SubscriptionConfirmation makes the runtime GET its SubscribeURL on the local server; nothing is stored", async () => {
    const message = {
      Type: "SubscriptionConfirmation",
      MessageId: randomUUID(),
      Token: "2336412f37fb687f5d51e6e2425a8a58",
      TopicArn: TOPIC,
      Message: "You have chosen to subscribe to the topic.",
      SubscribeURL: `http://${serverHost}/confirm?Action=ConfirmSubscription&Token=2336412f37fb687f5d51e6e2425a8a58`,
      Timestamp: new Date().toISOString(),
    };
    const canonical = ["Message", "MessageId", "SubscribeURL", "Timestamp", "Token", "TopicArn", "Type"].map((key) => `${key}\n${message[key]}\n`).join("");
    const signature = createSign("RSA-SHA1").update(canonical).sign(chain.leafKey, "base64");
    const body = JSON.stringify({ ...message, SignatureVersion: "1", Signature: signature, SigningCertURL: `http://${serverHost}/cert.pem` });
    const answer = await request("/webhooks/sns", { method: "POST", body, headers: { "content-type": "text/plain; charset=UTF-8", "x-amz-sns-message-type": "SubscriptionConfirmation" } });
    assert.deepEqual([answer.status, JSON.parse(answer.text)], [200, { status: "subscription_confirmed" }]);
    assert.ok(calls.some((call) => call.method === "GET" && call.url === "/confirm?Action=ConfirmSubscription&Token=2336412f37fb687f5d51e6e2425a8a58"));
    assert.equal(await rows("sns"), 0);
  });

  it("Twitch: the challenge is answered as raw text", async () => {
    const body = JSON.stringify({ challenge: "pogchamp-kappa-360noscope-vohiyo", subscription: { id: randomUUID(), type: "channel.follow" } });
    const [id, stamp] = [randomUUID(), new Date().toISOString()];
    const headers = { "twitch-eventsub-message-id": id, "twitch-eventsub-message-timestamp": stamp, "twitch-eventsub-message-type": "webhook_callback_verification", "twitch-eventsub-message-signature": `sha256=${createHmac("sha256", "e2e-twitch-secret").update(id + stamp + body).digest("hex")}` };
    const answer = await request("/webhooks/twitch", { method: "POST", body, headers });
    assert.deepEqual([answer.status, answer.text], [200, "pogchamp-kappa-360noscope-vohiyo"]);
    assert.match(answer.headers.get("content-type"), /^text\/plain/);
  });

  it("Zoom: endpoint.url_validation answered with plainToken and its HMAC", async () => {
    const body = JSON.stringify({ payload: { plainToken: "qgg8vlvZRS6UYooatFL8Aw" }, event_ts: Date.now(), event: "endpoint.url_validation" });
    const t = Math.floor(Date.now() / 1000);
    const headers = { "x-zm-request-timestamp": String(t), "x-zm-signature": `v0=${createHmac("sha256", "e2e-zoom-secret").update(`v0:${t}:${body}`).digest("hex")}` };
    const answer = await request("/webhooks/zoom", { method: "POST", body, headers });
    assert.deepEqual(JSON.parse(answer.text), { plainToken: "qgg8vlvZRS6UYooatFL8Aw", encryptedToken: createHmac("sha256", "e2e-zoom-secret").update("qgg8vlvZRS6UYooatFL8Aw").digest("hex") });
  });

  it("Discord: an interaction PING answered {\"type\":1}", async () => {
    const body = JSON.stringify({ id: randomUUID(), application_id: "1", type: 1, version: 1, token: "t" });
    const t = String(Math.floor(Date.now() / 1000));
    const headers = { "x-signature-timestamp": t, "x-signature-ed25519": sign(null, Buffer.from(t + body), discord.privateKey).toString("hex") };
    const answer = await request("/webhooks/discord", { method: "POST", body, headers });
    assert.deepEqual([answer.status, answer.text], [200, '{"type":1}']);
  });

  it("Discord: a slash command stored and answered {\"type\":5} (deferred), a component {\"type\":6}", async () => {
    const signed = (body) => {
      const t = String(Math.floor(Date.now() / 1000));
      return { "content-type": "application/json", "x-signature-timestamp": t, "x-signature-ed25519": sign(null, Buffer.from(t + body), discord.privateKey).toString("hex") };
    };
    const command = JSON.stringify({ id: randomUUID(), application_id: "1", type: 2, version: 1, token: `e2e-${randomUUID()}`, data: { id: "2", name: "blep", type: 1 } });
    const answer = await request("/webhooks/discord", { method: "POST", body: command, headers: signed(command) });
    assert.deepEqual([answer.status, answer.text], [200, '{"type":5}']);
    const component = JSON.stringify({ id: randomUUID(), application_id: "1", type: 3, version: 1, token: `e2e-${randomUUID()}`, data: { custom_id: "click_one", component_type: 2 } });
    assert.deepEqual((await request("/webhooks/discord", { method: "POST", body: component, headers: signed(component) })).text, '{"type":6}');
    const stored = (await inbox.admin("/admin/deliveries?source=discord")).json.deliveries.map((delivery) => delivery.eventType).sort();
    assert.deepEqual(stored, ["APPLICATION_COMMAND", "MESSAGE_COMPONENT"]);
  });

  it("Event Grid: the validation event answered with validationResponse", async () => {
    const body = JSON.stringify([{ id: randomUUID(), eventType: "Microsoft.EventGrid.SubscriptionValidationEvent", subject: "", data: { validationCode: "512d38b6-c7b8-40c8-89fe-f46f9e9622b6" }, eventTime: new Date().toISOString(), dataVersion: "2", metadataVersion: "1" }]);
    const answer = await request("/webhooks/eventgrid?key=e2e-eventgrid-key", { method: "POST", body, headers: { "content-type": "application/json" } });
    assert.deepEqual(JSON.parse(answer.text), { validationResponse: "512d38b6-c7b8-40c8-89fe-f46f9e9622b6" });
  });

  it("Graph: validationToken echoed as text; Dropbox: the GET challenge echoed as text", async () => {
    const graph = await request("/webhooks/graph?validationToken=Validation%3A%20Testing", { method: "POST" });
    assert.deepEqual([graph.status, graph.text], [200, "Validation: Testing"]);
    const dropbox = await request("/webhooks/dropbox?challenge=e2e-dropbox-challenge");
    assert.deepEqual([dropbox.status, dropbox.text, dropbox.headers.get("x-content-type-options")], [200, "e2e-dropbox-challenge", "nosniff"]);
    assert.equal(await rows("graph"), 0);
    assert.equal(await rows("dropbox"), 0);
  });

  it("Adyen: a signed notification is answered [accepted] and stored per item", async () => {
    const item = { amount: { currency: "EUR", value: 1130 }, eventCode: "AUTHORISATION", eventDate: "2026-12-04T12:00:00+01:00", merchantAccountCode: "E2E", merchantReference: randomUUID(), pspReference: "7914073381342284", originalReference: "", paymentMethod: "visa", success: "true" };
    const signed = [item.pspReference, item.originalReference, item.merchantAccountCode, item.merchantReference, item.amount.value, item.amount.currency, item.eventCode, item.success].join(":");
    const hmacSignature = createHmac("sha256", Buffer.from(ADYEN_KEY, "hex")).update(signed).digest("base64");
    const body = JSON.stringify({ live: "false", notificationItems: [{ NotificationRequestItem: { ...item, additionalData: { hmacSignature } } }] });
    const answer = await request("/webhooks/adyen", { method: "POST", body, headers: { "content-type": "application/json" } });
    assert.deepEqual([answer.status, answer.text], [200, "[accepted]"]);
    assert.equal(await rows("adyen"), 1);
  });
});
