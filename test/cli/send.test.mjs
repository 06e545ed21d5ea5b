// `webhook-inbox send` against a stub receiver (node:http): what it signs, checked by the providers'
// official SDKs where one verifies (stripe-node, @octokit/webhooks-methods, standardwebhooks, svix),
// else by an independent check written here from the provider's documentation. The real inbox's
// verifiers are exercised by test/e2e/send.test.mjs.
import assert from "node:assert/strict";
import { createHmac, timingSafeEqual } from "node:crypto";
import { mkdtempSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { verify as verifyGithub } from "@octokit/webhooks-methods";
import { Webhook as StandardWebhook } from "standardwebhooks";
import Stripe from "stripe";
import { Webhook as SvixWebhook } from "svix";
import { main } from "../../src/cli/webhook-inbox.mjs";

const SECRETS = {
  STRIPE_WEBHOOK_SECRET: "whsec_cli_stripe",
  GITHUB_WEBHOOK_SECRET: "cli github secret, with spaces",
  SHOPIFY_WEBHOOK_SECRET: "cli-shopify",
  SLACK_WEBHOOK_SECRET: "cli-slack",
  STANDARD_WEBHOOK_SECRET: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
  SVIX_WEBHOOK_SECRET: "whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD",
  GITLAB_WEBHOOK_SECRET: "cli-gitlab",
  TWILIO_WEBHOOK_SECRET: "cli-twilio",
  ACME_WEBHOOK_SECRET: "cli-acme",
};

/** @type {{ url: string, headers: import("node:http").IncomingHttpHeaders, body: string }[]} */
const received = [];
let answer = [200, JSON.stringify({ status: "stored" })];
const server = createServer((request, response) => {
  let body = "";
  request.setEncoding("utf8");
  request.on("data", (chunk) => (body += chunk));
  request.on("end", () => {
    received.push({ url: request.url ?? "", headers: request.headers, body });
    response.writeHead(answer[0], { "content-type": "application/json" }).end(answer[1]);
  });
});
let url = "";
before(() => new Promise((resolve) => server.listen(0, "127.0.0.1", () => ((url = `http://127.0.0.1:${server.address().port}`), resolve()))));
after(() => new Promise((resolve) => server.close(resolve)));

/** A project root whose .dev.vars holds the secrets, as `npm run dev` makes one. */
const root = mkdtempSync(join(tmpdir(), "webhook-inbox-send-"));
writeFileSync(join(root, ".dev.vars"), Object.entries(SECRETS).map(([name, value]) => `${name}="${value}"`).join("\n"));

async function send(args, env = {}) {
  const out = [];
  const err = [];
  const code = await main(["send", ...args], { env: { INBOX_URL: url, ...env }, root, out: (line) => out.push(line), err: (line) => err.push(line) });
  return { code, stdout: out.join("\n"), stderr: err.join("\n"), request: received.at(-1) };
}

/** HMAC of `data` under `key`, as the provider's documentation describes it. */
const mac = (algorithm, key, data, encoding) => createHmac(algorithm, key).update(data).digest(encoding);
const same = (a, b) => a.length === b.length && timingSafeEqual(Buffer.from(a), Buffer.from(b));

describe("webhook-inbox send", () => {
  it("signs a Stripe sample that stripe-node's constructEvent accepts, and prints what the inbox answered", async () => {
    answer = [200, JSON.stringify({ status: "stored" })];
    const result = await send(["stripe"]);
    assert.equal(result.code, 0, result.stderr);
    assert.equal(result.request.url, "/webhooks/stripe");
    const event = new Stripe("sk_test_unused").webhooks.constructEvent(result.request.body, result.request.headers["stripe-signature"], SECRETS.STRIPE_WEBHOOK_SECRET);
    assert.equal(event.type, "payment_intent.succeeded");
    assert.equal(typeof event.data.object.amount, "number");
    assert.match(result.stdout, new RegExp(`^stripe/${event.id} \\(payment_intent\\.succeeded\\): stored\\nsee it: npx webhook-inbox show stripe ${event.id}$`));
  });

  it("writes --id into a Stripe file's body, and sends the file byte for byte without it", async () => {
    const file = join(root, "event.json");
    const text = '{"id": "evt_from_file", "type": "invoice.paid",\n "object": "event"}';
    writeFileSync(file, text);
    const asIs = await send(["stripe", file]);
    assert.equal(asIs.request.body, text);
    assert.match(asIs.stdout, /^stripe\/evt_from_file \(invoice\.paid\): stored/);
    const withId = await send(["stripe", file, "--id", "evt_given"]);
    const event = new Stripe("sk_test_unused").webhooks.constructEvent(withId.request.body, withId.request.headers["stripe-signature"], SECRETS.STRIPE_WEBHOOK_SECRET);
    assert.equal(event.id, "evt_given");
  });

  it("signs GitHub as @octokit/webhooks-methods verifies, with the id, the event and a secret holding spaces", async () => {
    const result = await send(["github", "--id", "d-1", "--event", "issues"]);
    assert.equal(result.code, 0, result.stderr);
    assert.equal(await verifyGithub(SECRETS.GITHUB_WEBHOOK_SECRET, result.request.body, result.request.headers["x-hub-signature-256"]), true);
    assert.equal(result.request.headers["x-github-delivery"], "d-1");
    assert.equal(result.request.headers["x-github-event"], "issues");
  });

  it("signs Standard Webhooks and Svix as their own libraries verify", async () => {
    const standard = await send(["standard", "--id", "msg_1"]);
    assert.equal(new StandardWebhook(SECRETS.STANDARD_WEBHOOK_SECRET).verify(standard.request.body, standard.request.headers).type, "invoice.paid");
    assert.equal(standard.request.headers["webhook-id"], "msg_1");
    const svix = await send(["svix"]);
    assert.equal(new SvixWebhook(SECRETS.SVIX_WEBHOOK_SECRET).verify(svix.request.body, svix.request.headers).type, "user.created");
  });

  it("signs Shopify with a base64 HMAC-SHA256 of the body", async () => {
    const { request } = await send(["shopify", "--id", "w-1"]);
    assert.ok(same(request.headers["x-shopify-hmac-sha256"], mac("sha256", SECRETS.SHOPIFY_WEBHOOK_SECRET, request.body, "base64")));
    assert.equal(request.headers["x-shopify-webhook-id"], "w-1");
    assert.equal(request.headers["x-shopify-topic"], "orders/create");
  });

  it("signs Slack with v0= HMAC-SHA256 of v0:timestamp:body, the id in the body's event_id", async () => {
    const { request } = await send(["slack", "--id", "Ev1"]);
    const timestamp = request.headers["x-slack-request-timestamp"];
    assert.ok(same(request.headers["x-slack-signature"], `v0=${mac("sha256", SECRETS.SLACK_WEBHOOK_SECRET, `v0:${timestamp}:${request.body}`, "hex")}`));
    assert.equal(JSON.parse(request.body).event_id, "Ev1");
  });

  it("sends GitLab's token and Twilio's signature over the URL and the sorted form", async () => {
    const gitlab = await send(["gitlab", "--id", "g-1"]);
    assert.equal(gitlab.request.headers["x-gitlab-token"], SECRETS.GITLAB_WEBHOOK_SECRET);
    assert.equal(gitlab.request.headers["idempotency-key"], "g-1");
    const twilio = await send(["twilio"]);
    const form = new URLSearchParams(twilio.request.body);
    const signed = [...form.keys()].sort().reduce((text, name) => text + name + form.get(name), `${url}/webhooks/twilio`);
    assert.ok(same(twilio.request.headers["x-twilio-signature"], mac("sha1", SECRETS.TWILIO_WEBHOOK_SECRET, signed, "base64")));
    assert.equal(twilio.request.headers["content-type"], "application/x-www-form-urlencoded");
  });

  it("makes every sample a new delivery: two GitHub samples differ in content, not only in id", async () => {
    const first = await send(["github"]);
    const second = await send(["github"]);
    assert.notEqual(first.request.body, second.request.body);
    assert.notEqual(first.request.headers["x-github-delivery"], second.request.headers["x-github-delivery"]);
  });

  it("signs a custom source with --provider, and prefers the environment's secret to .dev.vars", async () => {
    const { request, code } = await send(["acme", "--provider", "github"], { ACME_WEBHOOK_SECRET: "from-env" });
    assert.equal(code, 0);
    assert.equal(request.url, "/webhooks/acme");
    assert.equal(await verifyGithub("from-env", request.body, request.headers["x-hub-signature-256"]), true);
  });

  it("needs no admin token", async () => {
    const result = await send(["stripe"], { INBOX_ADMIN_TOKEN: undefined });
    assert.equal(result.code, 0, result.stderr);
  });

  it("explains a 401 in one line, naming the secret and .dev.vars", async () => {
    answer = [401, JSON.stringify({ error: "invalid_signature", message: "signature mismatch" })];
    const result = await send(["stripe"]);
    assert.equal(result.code, 1);
    assert.match(result.stderr, /^webhook-inbox: the inbox refused the signature \(401 signature mismatch\): its STRIPE_WEBHOOK_SECRET differs .*\.dev\.vars/);
    assert.equal(result.stderr.split("\n").length, 1);
    answer = [200, JSON.stringify({ status: "stored" })];
  });

  it("exits 2 for a source without a known provider, 1 for a source without a secret", async () => {
    const unknown = await send(["mystery"]);
    assert.equal(unknown.code, 2);
    assert.match(unknown.stderr, /no signer for "mystery": pass --provider, one of stripe, github/);
    const before = received.length;
    const noSecret = await send(["other", "--provider", "stripe"]);
    assert.equal(noSecret.code, 1);
    assert.match(noSecret.stderr, /no OTHER_WEBHOOK_SECRET in the environment, \.dev\.vars or \.dev\.vars\.example/);
    assert.equal(received.length, before, "nothing was sent");
  });
});
