// Black-box ingest: real HTTP against wrangler dev, deliveries signed by the providers' SDKs
// (or, where there is none, by Node's own crypto), each forgery refused, every status checked.
import assert from "node:assert/strict";
import { request } from "node:http";
import { after, before, describe, it } from "node:test";
import { LocalInbox, SECRETS } from "./harness.mjs";
import { githubDelivery, paymentEvent, shopifyDelivery, slackDelivery, standardDelivery, stripeDelivery, svixDelivery, twilioDelivery } from "./signers.mjs";

const inbox = new LocalInbox();
before(() => inbox.start());
after(() => inbox.stop());

const send = (delivery) => inbox.post(delivery.path, delivery.body, delivery.headers);

/** Stored on the first send, duplicate on the second: the provider's id is the key. */
async function assertStoredOnce(delivery, source, id) {
  const first = await send(delivery);
  assert.deepEqual([first.status, first.json], [200, { status: "stored", source, id }]);
  const second = await send(delivery);
  assert.deepEqual([second.status, second.json], [200, { status: "duplicate", source, id }]);
}

function tampered(delivery) {
  return { ...delivery, body: delivery.body.replace(/.$/, " }") };
}

describe("deliveries signed by the providers' SDKs", { timeout: 180_000 }, () => {
  it("stores a Stripe event signed by stripe-node once, and refuses its forgeries", async () => {
    const delivery = stripeDelivery(paymentEvent("evt_e2e_sdk_stripe", 990));
    await assertStoredOnce(delivery, "stripe", "evt_e2e_sdk_stripe");
    assert.equal((await send(tampered(delivery))).status, 401);
    assert.equal((await send(stripeDelivery(paymentEvent("evt_e2e_wrong", 1), "whsec_not_the_secret"))).status, 401);
    const stale = stripeDelivery(paymentEvent("evt_e2e_stale", 1));
    stale.headers["stripe-signature"] = stale.headers["stripe-signature"].replace(/t=\d+/, `t=${Math.floor(Date.now() / 1000) - 3_600}`);
    assert.equal((await send(stale)).status, 401);
  });

  it("stores a GitHub delivery signed by Octokit once, and refuses its forgeries", async () => {
    const delivery = await githubDelivery("e2e-github-guid-1");
    await assertStoredOnce(delivery, "github", "e2e-github-guid-1");
    assert.equal((await send(tampered(delivery))).status, 401);
    assert.equal((await send(await githubDelivery("e2e-github-guid-2", "push", {}, "wrong secret"))).status, 401);
    const noId = await githubDelivery("x");
    delete noId.headers["x-github-delivery"];
    assert.deepEqual([(await send(noId)).status, (await send(noId)).json.error], [400, "missing_delivery_id"]);
  });

  it("stores Standard Webhooks and Svix deliveries signed by their libraries once, and refuses forgeries", async () => {
    await assertStoredOnce(standardDelivery("msg_e2e_standard"), "standard", "msg_e2e_standard");
    await assertStoredOnce(svixDelivery("msg_e2e_svix"), "svix", "msg_e2e_svix");
    assert.equal((await send(tampered(standardDelivery("msg_e2e_t")))).status, 401);
    assert.equal((await send(svixDelivery("msg_e2e_w", {}, "whsec_dGhpcyBpcyBub3QgdGhlIHNlY3JldA=="))).status, 401);
    const missing = svixDelivery("msg_e2e_m");
    delete missing.headers["svix-signature"];
    assert.equal((await send(missing)).status, 401);
  });

  it("stores Shopify, Slack and Twilio deliveries signed as their docs describe, and refuses forgeries", async () => {
    await assertStoredOnce(shopifyDelivery("e2e-shopify-1"), "shopify", "e2e-shopify-1");
    await assertStoredOnce(slackDelivery("Ev_e2e_1"), "slack", "Ev_e2e_1");
    const params = { MessageSid: "SM_e2e_1", From: "+14155550100", Body: "hello" };
    const twilio = twilioDelivery(inbox.url, params);
    const first = await send(twilio);
    assert.deepEqual([first.status, first.json.status, first.json.source], [200, "stored", "twilio"]);
    assert.equal((await send(twilio)).json.status, "duplicate");
    assert.equal((await send(tampered(shopifyDelivery("e2e-shopify-2")))).status, 401);
    assert.equal((await send(slackDelivery("Ev_e2e_old", SECRETS.SLACK_WEBHOOK_SECRET, Math.floor(Date.now() / 1000) - 600))).status, 401);
    assert.equal((await send(twilioDelivery(inbox.url, params, "wrong token"))).status, 401);
  });
});

describe("the receiver's statuses", { timeout: 120_000 }, () => {
  it("answers 404 for an unknown source and 405 for GET on a known one", async () => {
    assert.deepEqual([(await inbox.post("/webhooks/nope", "{}")).status], [404]);
    const response = await fetch(`${inbox.url}/webhooks/stripe`);
    assert.deepEqual([response.status, response.headers.get("allow")], [405, "POST"]);
  });

  it("answers 413 for a declared and for a chunked body over 1 MiB", async () => {
    const big = "x".repeat(1_048_577);
    assert.equal((await inbox.post("/webhooks/stripe", big)).status, 413);
    // Chunked, no Content-Length. (That the worker stops reading at the limit is proven in
    // test/http/receiver.test.ts; over HTTP the runtime may drain the rest before answering.)
    const { status, body } = await postChunked(`${inbox.url}/webhooks/stripe`, 64 * 1024, 64);
    assert.equal(status, 413, `answered ${status}: ${body.slice(0, 300)}`);
    assert.equal(JSON.parse(body).error, "payload_too_large");
  });

  it("answers 503 source_not_configured for a source without a secret", async () => {
    const result = await inbox.post("/webhooks/gitlab", "{}", { "x-gitlab-token": "anything", "idempotency-key": "k" });
    assert.deepEqual([result.status, result.json.error], [503, "source_not_configured"]);
  });

  it("stores 20 parallel copies of one delivery as one row", async () => {
    const delivery = standardDelivery("msg_e2e_twenty");
    const results = await Promise.all(Array.from({ length: 20 }, () => send(delivery)));
    assert.ok(results.every((result) => result.status === 200));
    assert.equal(results.filter((result) => result.json.status === "stored").length, 1);
    const [row] = await inbox.sql("SELECT COUNT(*) AS n FROM deliveries WHERE source = 'standard' AND id = 'msg_e2e_twenty'");
    assert.equal(row.n, 1);
  });

  it("answers a Slack url_verification handshake with its challenge and stores nothing", async () => {
    const timestamp = Math.floor(Date.now() / 1000);
    const body = JSON.stringify({ type: "url_verification", token: "t", challenge: "e2e-challenge" });
    const { createHmac } = await import("node:crypto");
    const signature = `v0=${createHmac("sha256", SECRETS.SLACK_WEBHOOK_SECRET).update(`v0:${timestamp}:${body}`).digest("hex")}`;
    const result = await inbox.post("/webhooks/slack", body, { "x-slack-request-timestamp": String(timestamp), "x-slack-signature": signature });
    assert.deepEqual([result.status, result.json], [200, { challenge: "e2e-challenge" }]);
  });
});

/** POSTs `count` chunks of `size` bytes with chunked encoding, stopping once a response arrives. */
function postChunked(url, size, count) {
  return new Promise((resolve, reject) => {
    let sentBytes = 0;
    let answered = false;
    const req = request(url, { method: "POST", headers: { "transfer-encoding": "chunked" } }, (response) => {
      answered = true;
      let body = "";
      response.on("data", (chunk) => (body += chunk));
      response.on("end", () => resolve({ status: response.statusCode, body }));
    });
    req.on("error", (error) => (answered ? undefined : reject(error)));
    const chunk = Buffer.alloc(size, 0x61);
    const pump = () => {
      if (answered || sentBytes >= size * count) return req.end();
      sentBytes += size;
      if (req.write(chunk)) setImmediate(pump);
      else req.once("drain", pump);
    };
    pump();
  });
}
