// A captured request resent under a fresh id: for providers whose delivery id is not signed, the
// signed content's digest makes it a duplicate (migrations/0004). The real store, through the receiver.
import { env } from "cloudflare:workers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { github } from "../../src/providers/github";
import type { Provider } from "../../src/providers/types";
import { SOURCES } from "../../src/sources";
import { sql } from "../../src/sql";
import {
  BASE_URL,
  githubSignature,
  post,
  postWithEnv,
  shopifySignature,
  stripeSignature,
  twilioSignature,
  unique,
} from "../helpers/provider-signers";
import { standardHeaders } from "../helpers/signers";
import { countWithBody, deliveryRow, exec, rows } from "../helpers/store-db";

/** Rows of `source` holding exactly `body`. */
async function rowsWithBody(source: string, body: string): Promise<number> {
  return countWithBody(source, new TextEncoder().encode(body));
}

const githubHeaders = async (delivery: string, body: string, secret?: string) => ({
  "x-hub-signature-256": await githubSignature(body, secret),
  "x-github-delivery": delivery,
  "x-github-event": "push",
  "content-type": "application/json",
});

describe("a signed request replayed under a new delivery id", () => {
  it("is a duplicate for GitHub (X-GitHub-Delivery is not signed) and stores one row", async () => {
    const body = JSON.stringify({ ref: "refs/heads/main", after: unique("") });
    const [first, replayId] = [unique(""), unique("")];
    expect((await post("github", body, await githubHeaders(first, body))).json.status).toBe("stored");
    expect(await post("github", body, await githubHeaders(replayId, body))).toEqual({ status: 200, json: { status: "duplicate", source: "github", id: replayId } });
    expect(await deliveryRow("github", replayId)).toBeNull();
    expect(await rowsWithBody("github", body)).toBe(1);
  });

  it("is a duplicate for Shopify under a new X-Shopify-Webhook-Id", async () => {
    const body = JSON.stringify({ id: 820982911946154500, note: unique("") });
    const headers = async (id: string) => ({ "x-shopify-hmac-sha256": await shopifySignature(body), "x-shopify-webhook-id": id, "x-shopify-topic": "orders/create" });
    expect((await post("shopify", body, await headers(unique("")))).json.status).toBe("stored");
    expect((await post("shopify", body, await headers(unique("")))).json.status).toBe("duplicate");
    expect(await rowsWithBody("shopify", body)).toBe(1);
  });

  it("is a duplicate for GitLab under a new Idempotency-Key and X-Gitlab-Event-UUID", async () => {
    const body = JSON.stringify({ object_kind: "push", checkout_sha: unique("") });
    const headers = (id: string) => ({ "x-gitlab-token": env.GITLAB_WEBHOOK_SECRET, "idempotency-key": id, "x-gitlab-event-uuid": id, "x-gitlab-event": "Push Hook" });
    expect((await post("gitlab", body, headers(unique("")))).json.status).toBe("stored");
    expect((await post("gitlab", body, headers(unique("")))).json.status).toBe("duplicate");
    expect(await rowsWithBody("gitlab", body)).toBe(1);
  });

  it("is a duplicate for Twilio under a new I-Twilio-Idempotency-Token", async () => {
    const params = { MessageSid: unique("SM"), From: "+14158675309", Body: "hi" };
    const body = new URLSearchParams(params).toString();
    const headers = async (token: string) => ({
      "content-type": "application/x-www-form-urlencoded",
      "x-twilio-signature": await twilioSignature(`${BASE_URL}/webhooks/twilio`, params),
      "i-twilio-idempotency-token": token,
    });
    expect((await post("twilio", body, await headers(unique("idem-")))).json.status).toBe("stored");
    expect((await post("twilio", body, await headers(unique("idem-")))).json.status).toBe("duplicate");
    // Without a token the id is the signed content's digest: the same content again, a duplicate too.
    const { "i-twilio-idempotency-token": _, ...noToken } = await headers("unused");
    const answer = await post("twilio", body, noToken);
    expect(answer.json).toMatchObject({ status: "duplicate", source: "twilio" });
    expect(answer.json.id).toMatch(/^[0-9a-f]{64}$/);
    expect(await rowsWithBody("twilio", body)).toBe(1);
  });

  it("answers one stored and one duplicate for two copies with different ids arriving together", async () => {
    const body = JSON.stringify({ ref: "refs/heads/main", after: unique("") });
    const results = await Promise.all(
      Array.from({ length: 6 }, async () => post("github", body, await githubHeaders(unique(""), body))),
    );
    expect(results.map((result) => result.json.status).sort()).toEqual(["duplicate", "duplicate", "duplicate", "duplicate", "duplicate", "stored"]);
    expect(await rowsWithBody("github", body)).toBe(1);
  });

  it("is stored again once the original row is gone (the digest lives and goes with its row)", async () => {
    const body = JSON.stringify({ ref: "refs/heads/main", after: unique("") });
    const first = unique("");
    expect((await post("github", body, await githubHeaders(first, body))).json.status).toBe("stored");
    await exec(sql`DELETE FROM deliveries WHERE source = 'github' AND id = ${first}`);
    expect((await post("github", body, await githubHeaders(unique(""), body))).json.status).toBe("stored");
  });

  it("does not cross sources: the same body on two sources is two deliveries", async () => {
    const body = JSON.stringify({ ref: "refs/heads/main", after: unique("") });
    expect((await post("github", body, await githubHeaders(unique(""), body))).json.status).toBe("stored");
    const shopify = { "x-shopify-hmac-sha256": await shopifySignature(body), "x-shopify-webhook-id": unique(""), "x-shopify-topic": "orders/create" };
    expect((await post("shopify", body, shopify)).json.status).toBe("stored");
  });
});

describe("a source with dedupeOnContent: false", () => {
  // A source of its own for this file (SOURCES is the app's one registry), with its own secret var.
  const sources = SOURCES as Record<string, Provider>;
  const SECRET = { GITHUB_LENIENT_WEBHOOK_SECRET: "github-lenient-secret" };
  beforeAll(() => {
    sources["github-lenient"] = github({ dedupeOnContent: false });
  });
  afterAll(() => {
    delete sources["github-lenient"];
  });

  it("stores a byte-identical body under a new X-GitHub-Delivery as a delivery of its own, without a digest", async () => {
    const body = JSON.stringify({ ref: "refs/heads/main", after: unique("") });
    const [first, second] = [unique(""), unique("")];
    const send = async (id: string) => postWithEnv("github-lenient", body, await githubHeaders(id, body, SECRET.GITHUB_LENIENT_WEBHOOK_SECRET), SECRET);
    expect((await send(first)).json.status).toBe("stored");
    expect((await send(second)).json).toEqual({ status: "stored", source: "github-lenient", id: second });
    expect(await rowsWithBody("github-lenient", body)).toBe(2);
    const digests = await rows(sql`SELECT content_digest FROM deliveries WHERE source = 'github-lenient' AND id IN (${first}, ${second})`);
    expect(digests).toEqual([{ content_digest: null }, { content_digest: null }]);
  });
});

describe("providers whose id is signed", () => {
  it("leave Stripe unaffected: no digest is stored (its id and timestamp are signed)", async () => {
    const id = unique("evt_");
    const body = JSON.stringify({ id, object: "event", type: "invoice.paid" });
    expect((await post("stripe", body, { "stripe-signature": await stripeSignature(body) })).json.status).toBe("stored");
    const [row] = await rows(sql`SELECT content_digest FROM deliveries WHERE source = 'stripe' AND id = ${id}`);
    expect(row).toEqual({ content_digest: null });
  });

  it("store two Standard Webhooks deliveries with identical bodies under two signed ids", async () => {
    const body = JSON.stringify({ type: "ping", same: unique("") });
    const ids = [unique("msg_"), unique("msg_")];
    for (const id of ids) expect((await post("standard", body, standardHeaders(body, { id }))).json).toEqual({ status: "stored", source: "standard", id });
  });

  it.each(Object.entries(SOURCES))("%s declares whether its id is signed, as its security grade says", (name, provider) => {
    const unsigned = ["github", "shopify", "gitlab", "twilio"];
    if (unsigned.includes(name)) expect(provider.signsDeliveryId).toBe(false);
    if (["stripe", "slack", "standard", "svix"].includes(name)) expect(provider.signsDeliveryId).toBe(true);
    expect(provider.signsDeliveryId).toBe(provider.grade!.deliveryIdSigned);
  });

  it.each(["jira", "bitbucket", "linear", "sentry", "gitea", "mailgun", "pubsub", "eventgrid", "graph", "postmark", "dropbox"])("%s's id is not signed", (name) => {
    expect(SOURCES[name]!.signsDeliveryId).toBe(false);
  });
});
