import { describe, expect, it } from "vitest";
import { stripe } from "../../src/providers/stripe";
import { deliveryRow } from "../helpers/store-db";
import { nowSeconds, post, secretsOf, stripeSignature, unique } from "../helpers/provider-signers";

const event = (id: string, type = "invoice.paid") => JSON.stringify({ id, object: "event", type, data: { object: { amount: 100 } } });
const request = (body: string, signature: string) => ({
  url: "https://inbox.example.com/webhooks/stripe",
  headers: new Headers({ "stripe-signature": signature }),
  body: new TextEncoder().encode(body),
});

describe("stripe provider", () => {
  it("stores a delivery signed by stripe-node under its event id and type", async () => {
    const id = unique("evt_");
    const body = event(id);
    const result = await post("stripe", body, { "stripe-signature": await stripeSignature(body) });
    expect(result).toEqual({ status: 200, json: { status: "stored", source: "stripe", id } });
    expect((await deliveryRow("stripe", id))?.event_type).toBe("invoice.paid");
  });

  it("answers duplicate when Stripe retries the same event, even with a fresh signature", async () => {
    const id = unique("evt_");
    const body = event(id);
    const first = await post("stripe", body, { "stripe-signature": await stripeSignature(body) });
    const retry = await post("stripe", body, { "stripe-signature": await stripeSignature(body, { timestamp: nowSeconds() - 60 }) });
    expect(first.json.status).toBe("stored");
    expect(retry).toEqual({ status: 200, json: { status: "duplicate", source: "stripe", id } });
  });

  it("accepts a delivery signed with the previous secret (rotation)", async () => {
    const body = event(unique("evt_"));
    const signature = await stripeSignature(body, { secret: secretsOf("STRIPE_WEBHOOK_SECRET")[1] });
    expect((await post("stripe", body, { "stripe-signature": signature })).status).toBe(200);
  });

  it("accepts a header with several v1 signatures when any one matches, ignoring v0", async () => {
    const body = event(unique("evt_"));
    const good = await stripeSignature(body);
    const [timestamp, v1] = good.split(",");
    const header = `${timestamp},v0=${"ab".repeat(32)},v1=${"00".repeat(32)},${v1}`;
    expect((await post("stripe", body, { "stripe-signature": header })).status).toBe(200);
  });

  it("refuses a header whose only signature uses the v0 scheme", async () => {
    const body = event(unique("evt_"));
    const header = (await stripeSignature(body)).replace("v1=", "v0=");
    const result = await post("stripe", body, { "stripe-signature": header });
    expect(result.status).toBe(401);
    expect(result.json.message).toContain("no v1 signature");
  });

  it("refuses a tampered body and stores nothing", async () => {
    const id = unique("evt_");
    const signature = await stripeSignature(event(id));
    const result = await post("stripe", event(id, "charge.refunded"), { "stripe-signature": signature });
    expect(result.status).toBe(401);
    expect(await deliveryRow("stripe", id)).toBeNull();
  });

  it("refuses a delivery signed with a secret that is not configured", async () => {
    const body = event(unique("evt_"));
    const signature = await stripeSignature(body, { secret: "whsec_someone_else" });
    expect((await post("stripe", body, { "stripe-signature": signature })).status).toBe(401);
  });

  it("refuses a delivery without a Stripe-Signature header", async () => {
    const result = await post("stripe", event(unique("evt_")), { "content-type": "application/json" });
    expect(result.status).toBe(401);
    expect(result.json.message).toContain("missing Stripe-Signature");
  });

  it.each([
    ["bad hex", (t: number) => `t=${t},v1=${"zz".repeat(32)}`],
    ["a truncated digest", (t: number) => `t=${t},v1=abcdef`],
    ["no timestamp", () => `v1=${"ab".repeat(32)}`],
    ["two timestamps", (t: number) => `t=${t},t=${t + 1},v1=${"ab".repeat(32)}`],
    ["a non-numeric timestamp", () => `t=yesterday,v1=${"ab".repeat(32)}`],
    ["no separators at all", () => "garbage"],
    ["a huge value", (t: number) => `t=${t},v1=${"ab".repeat(5_000)}`],
  ])("refuses a malformed header with %s as 401, not 500", async (_name, header) => {
    const result = await post("stripe", event(unique("evt_")), { "stripe-signature": header(nowSeconds()) });
    expect(result.status).toBe(401);
    expect(result.json.error).toBe("invalid_signature");
  });

  it("refuses a timestamp older than five minutes", async () => {
    const body = event(unique("evt_"));
    const result = await post("stripe", body, { "stripe-signature": await stripeSignature(body, { timestamp: nowSeconds() - 301 - 60 }) });
    expect(result.status).toBe(401);
    expect(result.json.message).toContain("too old");
  });

  it("refuses a timestamp more than five minutes in the future", async () => {
    const body = event(unique("evt_"));
    const result = await post("stripe", body, { "stripe-signature": await stripeSignature(body, { timestamp: nowSeconds() + 301 + 60 }) });
    expect(result.status).toBe(401);
    expect(result.json.message).toContain("in the future");
  });

  it("answers 400 for a verified body that has no event id", async () => {
    const body = JSON.stringify({ object: "event", type: "invoice.paid" });
    const result = await post("stripe", body, { "stripe-signature": await stripeSignature(body) });
    expect(result).toEqual({ status: 400, json: { error: "missing_delivery_id", message: expect.any(String) } });
  });

  it("verifies the header stripe-node accepts for whsec_test_secret at its own timestamp", async () => {
    const body = '{"id":"evt_test_webhook","object":"event"}';
    const header = "t=1492774577,v1=88a022085c6bdb887b02cb26ff76dd681234d9675c0f22844059f55552a8883a";
    const result = await stripe().verify(request(body, header), ["whsec_test_secret"], 1492774577);
    expect(result).toEqual({ ok: true, deliveryId: "evt_test_webhook", eventType: null });
  });

  it("keys the HMAC with the whole whsec_ string, not its base64 decoding", async () => {
    const body = '{"id":"evt_test_webhook","object":"event"}';
    const header = "t=1492774577,v1=88a022085c6bdb887b02cb26ff76dd681234d9675c0f22844059f55552a8883a";
    const result = await stripe().verify(request(body, header), ["test_secret"], 1492774577);
    expect(result.ok).toBe(false);
  });

  it("applies a per-source tolerance in both directions", async () => {
    const body = event("evt_tolerance");
    const signedAt = 1_700_000_000;
    const header = await stripeSignature(body, { timestamp: signedAt });
    const secrets = secretsOf("STRIPE_WEBHOOK_SECRET");
    expect((await stripe({ toleranceSeconds: 600 }).verify(request(body, header), secrets, signedAt + 500)).ok).toBe(true);
    expect((await stripe({ toleranceSeconds: 600 }).verify(request(body, header), secrets, signedAt - 500)).ok).toBe(true);
    expect((await stripe().verify(request(body, header), secrets, signedAt + 500)).ok).toBe(false);
    expect((await stripe().verify(request(body, header), secrets, signedAt - 500)).ok).toBe(false);
  });
});
