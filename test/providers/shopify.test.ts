import { beforeEach, describe, expect, it } from "vitest";
import { deliveryRow } from "../helpers/store-db";
import { post, secretsOf, shopifySignature, unique } from "../helpers/provider-signers";

// A body of its own per test: Shopify's id is not signed, so the inbox also deduplicates on the body.
let body = "";
beforeEach(() => {
  body = `{"id":820982911946154500,"email":"jon@example.com","total_price":"10.00","note":"${unique("")}"}`;
});
const headers = async (webhookId: string, payload = body, secret?: string): Promise<Record<string, string>> => ({
  "x-shopify-hmac-sha256": await shopifySignature(payload, secret),
  "x-shopify-webhook-id": webhookId,
  "x-shopify-event-id": `event-${webhookId}`,
  "x-shopify-topic": "orders/create",
  "content-type": "application/json",
});

describe("shopify provider", () => {
  it("stores a verified delivery under X-Shopify-Webhook-Id with X-Shopify-Topic as its type", async () => {
    const id = unique("");
    const result = await post("shopify", body, await headers(id));
    expect(result).toEqual({ status: 200, json: { status: "stored", source: "shopify", id } });
    expect((await deliveryRow("shopify", id))?.event_type).toBe("orders/create");
  });

  it("answers duplicate when Shopify retries with the same X-Shopify-Webhook-Id", async () => {
    const id = unique("");
    expect((await post("shopify", body, await headers(id))).json.status).toBe("stored");
    expect((await post("shopify", body, await headers(id))).json).toEqual({ status: "duplicate", source: "shopify", id });
  });

  it("falls back to X-Shopify-Event-Id when there is no X-Shopify-Webhook-Id", async () => {
    const { "x-shopify-webhook-id": _, ...rest } = await headers("unused");
    const eventId = unique("event-");
    const result = await post("shopify", body, { ...rest, "x-shopify-event-id": eventId });
    expect(result.json).toEqual({ status: "stored", source: "shopify", id: eventId });
  });

  it("accepts the Shopify Events header names without the X- prefix", async () => {
    const id = unique("");
    const result = await post("shopify", body, {
      "shopify-hmac-sha256": await shopifySignature(body),
      "shopify-webhook-id": id,
      "shopify-topic": "orders/create",
    });
    expect(result.json).toEqual({ status: "stored", source: "shopify", id });
  });

  it("accepts a delivery signed with the previous secret (rotation)", async () => {
    expect((await post("shopify", body, await headers(unique(""), body, secretsOf("SHOPIFY_WEBHOOK_SECRET")[1]))).status).toBe(200);
  });

  it("refuses a tampered body and stores nothing", async () => {
    const id = unique("");
    const result = await post("shopify", body.replace("10.00", "0.01"), await headers(id));
    expect(result.status).toBe(401);
    expect(await deliveryRow("shopify", id)).toBeNull();
  });

  it("refuses a delivery signed with a secret that is not configured", async () => {
    expect((await post("shopify", body, await headers(unique(""), body, "another-app"))).status).toBe(401);
  });

  it("refuses a delivery without an HMAC header", async () => {
    const { "x-shopify-hmac-sha256": _, ...rest } = await headers(unique(""));
    const result = await post("shopify", body, rest);
    expect(result.status).toBe(401);
    expect(result.json.message).toContain("missing X-Shopify-Hmac-Sha256");
  });

  it.each([
    ["bad base64", "not base64 at all!"],
    ["a hex digest instead of base64", "ab".repeat(32)],
    ["a truncated digest", "q83vEjRWeJA="],
    ["a huge value", "A".repeat(8_000)],
  ])("refuses a malformed HMAC with %s as 401, not 500", async (_name, signature) => {
    const result = await post("shopify", body, { ...(await headers(unique(""))), "x-shopify-hmac-sha256": signature });
    expect(result.status).toBe(401);
    expect(result.json.error).toBe("invalid_signature");
  });

  it("answers 400 for a verified delivery with neither id header", async () => {
    const { "x-shopify-webhook-id": _, "x-shopify-event-id": __, ...rest } = await headers("unused");
    expect(await post("shopify", body, rest)).toEqual({ status: 400, json: { error: "missing_delivery_id", message: expect.any(String) } });
  });
});
