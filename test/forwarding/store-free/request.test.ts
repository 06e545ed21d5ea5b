import { Webhook } from "standardwebhooks";
import { describe, expect, it } from "vitest";
import { checkForwardSecret, type ForwardDestination } from "../../../src/config/destination";
import { contentTypeOf, DELIVERY_HEADERS, forwardRequest, headerValue, signStandardWebhook, type ForwardedDelivery } from "../../../src/forwarding/request";

const SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
const KEY = (checkForwardSecret(SECRET) as { key: Uint8Array }).key;
const bytes = (text: string) => new TextEncoder().encode(text);

const destination: ForwardDestination = { url: "https://backend.example.com/hooks", key: KEY, timeoutSeconds: 30, concurrency: 10, maxAttempts: 5, retryBaseSeconds: 2, breaker: { failures: 5, openSeconds: 30 }, filterJson: null };
const delivery: ForwardedDelivery = {
  source: "shopify",
  deliveryId: "b54557e4-bdd9-4b37-8a5f-bf7d70bcd043",
  eventType: "orders/create",
  contentType: "application/json; charset=utf-8",
  body: bytes('{"id":820982911946154500,"note":"café"}'),
  idempotencyKey: "whi_0a1b2c",
  attempt: 2,
};

describe("signStandardWebhook", () => {
  it("gives the signature of the standard-webhooks libraries' published vector", async () => {
    expect(await signStandardWebhook(KEY, "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, bytes('{"test": 2432232314}'))).toBe(
      "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=",
    );
  });
});

describe("forwardRequest", () => {
  it("is a POST of the body as it is, its content type, and a signature the standardwebhooks library verifies", async () => {
    const now = Math.floor(Date.now() / 1000);
    const request = await forwardRequest(destination, delivery, now, new AbortController().signal);
    expect(request.method).toBe("POST");
    expect(request.url).toBe(destination.url);
    expect(request.redirect).toBe("manual");
    const body = new Uint8Array(await request.arrayBuffer());
    expect(body).toEqual(delivery.body);
    expect(request.headers.get("content-type")).toBe("application/json; charset=utf-8");
    expect(request.headers.get("webhook-id")).toBe("whi_0a1b2c");
    expect(request.headers.get("webhook-timestamp")).toBe(String(now));
    const verified = new Webhook(SECRET).verify(new TextDecoder().decode(body), Object.fromEntries(request.headers));
    expect(verified).toEqual({ id: 820982911946154500, note: "café" });
    expect(() => new Webhook("whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD").verify(new TextDecoder().decode(body), Object.fromEntries(request.headers))).toThrow();
  });

  it("names the source, the provider's delivery id, the event type and the attempt", async () => {
    const request = await forwardRequest(destination, delivery, 1, new AbortController().signal);
    expect(request.headers.get(DELIVERY_HEADERS.source)).toBe("shopify");
    expect(request.headers.get(DELIVERY_HEADERS.deliveryId)).toBe("b54557e4-bdd9-4b37-8a5f-bf7d70bcd043");
    expect(request.headers.get(DELIVERY_HEADERS.eventType)).toBe("orders/create");
    expect(request.headers.get(DELIVERY_HEADERS.attempt)).toBe("2");
    const untyped = await forwardRequest(destination, { ...delivery, eventType: null }, 1, new AbortController().signal);
    expect(untyped.headers.has(DELIVERY_HEADERS.eventType)).toBe(false);
  });
});

describe("headerValue", () => {
  it("leaves printable ASCII as it is and percent-encodes %, controls and non-ASCII, reversibly", () => {
    for (const text of ["evt_1MqLx2", "orders/create", "a b:c=d"]) expect(headerValue(text)).toBe(text);
    for (const text of ["100%", "line\nbreak", "café ☕", "\ud800lone"]) {
      const value = headerValue(text);
      expect(value).toMatch(/^[\x20-\x7e]*$/);
      expect(decodeURIComponent(value)).toBe(text.toWellFormed());
    }
  });

  it("percent-encodes spaces at either end, which HTTP would drop, so that they come back", () => {
    for (const text of [" evt_1", "evt_1 ", "  two ends  ", " ", "\tcafé "]) {
      const carried = new Headers({ [DELIVERY_HEADERS.deliveryId]: headerValue(text) }).get(DELIVERY_HEADERS.deliveryId)!;
      expect(decodeURIComponent(carried), JSON.stringify(text)).toBe(text);
    }
    expect(headerValue("a b")).toBe("a b");
  });
});

describe("contentTypeOf", () => {
  it("is the provider's when known, else what the body is", () => {
    expect(contentTypeOf({ contentType: "application/vnd.api+json", body: bytes("{}") })).toBe("application/vnd.api+json");
    expect(contentTypeOf({ contentType: null, body: bytes('{"a":1}') })).toBe("application/json");
    expect(contentTypeOf({ contentType: null, body: bytes("Body=hi&From=%2B1555") })).toBe("application/x-www-form-urlencoded");
    expect(contentTypeOf({ contentType: null, body: new Uint8Array([0xff, 0x00, 0x10]) })).toBe("application/octet-stream");
  });
});
