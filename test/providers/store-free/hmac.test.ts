import { describe, expect, it } from "vitest";
import { sha256 } from "../../../src/providers/crypto";
import { hmac, type HmacOptions } from "../../../src/providers/hmac";
import { sha256Hex, shopifySignature } from "../../helpers/provider-signers";

const encoder = new TextEncoder();

/** An independent signer: Web Crypto directly, over raw bytes. */
async function sign(hash: "SHA-256" | "SHA-1", secret: string, data: Uint8Array, encoding: "hex" | "base64"): Promise<string> {
  const key = await crypto.subtle.importKey("raw", encoder.encode(secret), { name: "HMAC", hash }, false, ["sign"]);
  const bytes = new Uint8Array(await crypto.subtle.sign("HMAC", key, data));
  return encoding === "hex" ? [...bytes].map((byte) => byte.toString(16).padStart(2, "0")).join("") : btoa(String.fromCharCode(...bytes));
}

function request(headers: Record<string, string>, body: string | Uint8Array) {
  return { url: "https://inbox.example.com/webhooks/acme", headers: new Headers(headers), body: typeof body === "string" ? encoder.encode(body) : body };
}

const ACME: HmacOptions = {
  header: "X-Acme-Signature",
  prefix: "sha256=",
  timestampHeader: "X-Acme-Timestamp",
  signedContent: "{timestamp}.{body}",
  deliveryId: { jsonPath: "event.id" },
  eventType: { header: "X-Acme-Event" },
};
const SECRET = "acme-secret";
const NOW = 1_700_000_000;
const body = '{"event":{"id":"ev_1","kind":"order.paid"}}';

async function acmeHeaders(payload = body, options: { secret?: string; timestamp?: number } = {}) {
  const timestamp = String(options.timestamp ?? NOW);
  const signature = await sign("SHA-256", options.secret ?? SECRET, encoder.encode(`${timestamp}.${payload}`), "hex");
  return { "x-acme-signature": `sha256=${signature}`, "x-acme-timestamp": timestamp, "x-acme-event": "order.paid" };
}

describe("generic hmac provider", () => {
  it("verifies GitHub's documented vector when configured like GitHub", async () => {
    const provider = hmac({ header: "X-Hub-Signature-256", prefix: "sha256=", deliveryId: { header: "X-GitHub-Delivery" } });
    const headers = { "x-hub-signature-256": "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17", "x-github-delivery": "d-1" };
    expect(await provider.verify(request(headers, "Hello, World!"), ["It's a Secret to Everybody"], 0)).toEqual({
      ok: true,
      deliveryId: "d-1",
      eventType: null,
      contentDigest: await sha256(encoder.encode("Hello, World!")),
    });
  });

  it("verifies Slack's documented vector when configured with a v0:{timestamp}:{body} template", async () => {
    const provider = hmac({
      header: "X-Slack-Signature",
      prefix: "v0=",
      timestampHeader: "X-Slack-Request-Timestamp",
      signedContent: "v0:{timestamp}:{body}",
      deliveryId: "body-sha256",
    });
    const slackBody =
      "token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V&channel_name=foobar" +
      "&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack.com" +
      "%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c";
    const headers = {
      "x-slack-signature": "v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503",
      "x-slack-request-timestamp": "1531420618",
    };
    const result = await provider.verify(request(headers, slackBody), ["8f742231b10e8888abcd99yyyzzz85a5"], 1531420618);
    expect(result).toEqual({ ok: true, deliveryId: await sha256Hex(slackBody), eventType: null });
  });

  it("verifies a timestamped signature, taking the id from a JSON path and the type from a header", async () => {
    expect(await hmac(ACME).verify(request(await acmeHeaders(), body), [SECRET], NOW)).toEqual({ ok: true, deliveryId: "ev_1", eventType: "order.paid" });
  });

  it.each([
    ["an integer beyond 2^53", "12345678901234567890", "12345678901234567890"],
    ["a negative integer beyond 2^53", "-9007199254740993", "-9007199254740993"],
    ["a safe integer", "42", "42"],
    ["a decimal", "1.5", "1.5"],
  ])("reads a JSON number id that is %s with its exact digits", async (_name, literal, expected) => {
    const payload = `{"event":{"id":${literal},"kind":"order.paid"}}`;
    const result = await hmac(ACME).verify(request(await acmeHeaders(payload), payload), [SECRET], NOW);
    expect(result).toMatchObject({ ok: true, deliveryId: expected });
  });

  it("tells apart two ids beyond 2^53 that the same double would round to", async () => {
    const ids = ["9007199254740993", "9007199254740992"];
    const read = await Promise.all(
      ids.map(async (id) => {
        const payload = `{"event":{"id":${id}}}`;
        const result = await hmac(ACME).verify(request(await acmeHeaders(payload), payload), [SECRET], NOW);
        return result.ok ? result.deliveryId : null;
      }),
    );
    expect(read).toEqual(ids);
  });

  it("returns the digest of the whole signed content for an id read from a header (not signed)", async () => {
    const provider = hmac({ ...ACME, deliveryId: { header: "X-Acme-Delivery" } });
    const headers = { ...(await acmeHeaders()), "x-acme-delivery": "d-1" };
    expect(provider.signsDeliveryId).toBe(false);
    expect(await provider.verify(request(headers, body), [SECRET], NOW)).toMatchObject({ contentDigest: await sha256(encoder.encode(`${NOW}.${body}`)) });
  });

  it("returns no digest for a signed id unless asked, and none for a header id when switched off", async () => {
    const headers = { ...(await acmeHeaders()), "x-acme-delivery": "d-1" };
    const signedId = await hmac(ACME).verify(request(headers, body), [SECRET], NOW);
    const switchedOff = await hmac({ ...ACME, deliveryId: { header: "X-Acme-Delivery" }, dedupeOnContent: false }).verify(request(headers, body), [SECRET], NOW);
    const askedFor = await hmac({ ...ACME, dedupeOnContent: true }).verify(request(headers, body), [SECRET], NOW);
    expect([hmac(ACME).signsDeliveryId, "contentDigest" in signedId, "contentDigest" in switchedOff, "contentDigest" in askedFor]).toEqual([true, false, false, true]);
  });

  it("takes the event type from a JSON path when configured so", async () => {
    const provider = hmac({ ...ACME, eventType: { jsonPath: "event.kind" } });
    expect(await provider.verify(request(await acmeHeaders(), body), [SECRET], NOW)).toMatchObject({ ok: true, eventType: "order.paid" });
  });

  it("accepts the second of several secrets (rotation)", async () => {
    const headers = await acmeHeaders(body, { secret: "acme-rotated" });
    expect((await hmac(ACME).verify(request(headers, body), [SECRET, "acme-rotated"], NOW)).ok).toBe(true);
  });

  it("refuses a signature made with another secret", async () => {
    const headers = await acmeHeaders(body, { secret: "not-acme" });
    expect(await hmac(ACME).verify(request(headers, body), [SECRET], NOW)).toEqual({ ok: false, reason: "signature mismatch" });
  });

  it("refuses a tampered body", async () => {
    const headers = await acmeHeaders();
    expect((await hmac(ACME).verify(request(headers, body.replace("ev_1", "ev_2")), [SECRET], NOW)).ok).toBe(false);
  });

  it("refuses a timestamp changed after signing", async () => {
    const headers = { ...(await acmeHeaders()), "x-acme-timestamp": String(NOW + 1) };
    expect((await hmac(ACME).verify(request(headers, body), [SECRET], NOW)).ok).toBe(false);
  });

  it("refuses a stale or future timestamp, in a per-source window", async () => {
    const headers = await acmeHeaders();
    expect(await hmac(ACME).verify(request(headers, body), [SECRET], NOW + 301)).toEqual({ ok: false, reason: "timestamp too old" });
    expect(await hmac(ACME).verify(request(headers, body), [SECRET], NOW - 301)).toEqual({ ok: false, reason: "timestamp in the future" });
    expect((await hmac({ ...ACME, toleranceSeconds: 30 }).verify(request(headers, body), [SECRET], NOW + 31)).ok).toBe(false);
  });

  it("refuses a request without the timestamp header", async () => {
    const { "x-acme-timestamp": _, ...rest } = await acmeHeaders();
    expect((await hmac(ACME).verify(request(rest, body), [SECRET], NOW)).ok).toBe(false);
  });

  it("refuses a request without the signature header", async () => {
    const { "x-acme-signature": _, ...rest } = await acmeHeaders();
    expect(await hmac(ACME).verify(request(rest, body), [SECRET], NOW)).toEqual({ ok: false, reason: "missing X-Acme-Signature header" });
  });

  it.each([
    ["a missing prefix", "ab".repeat(32)],
    ["bad hex", `sha256=${"zz".repeat(32)}`],
    ["a SHA-1 length digest", `sha256=${"ab".repeat(20)}`],
    ["a huge value", `sha256=${"ab".repeat(5_000)}`],
  ])("refuses a malformed signature with %s without throwing", async (_name, signature) => {
    const headers = { ...(await acmeHeaders()), "x-acme-signature": signature };
    expect((await hmac(ACME).verify(request(headers, body), [SECRET], NOW)).ok).toBe(false);
  });

  it("verifies SHA-1 base64 signatures", async () => {
    const provider = hmac({ header: "X-Signature", algorithm: "SHA-1", encoding: "base64", deliveryId: { header: "X-Id" } });
    const headers = { "x-signature": await sign("SHA-1", SECRET, encoder.encode(body), "base64"), "x-id": "1" };
    expect((await provider.verify(request(headers, body), [SECRET], NOW)).ok).toBe(true);
  });

  it("verifies a Shopify-shaped base64 SHA-256 signature", async () => {
    const provider = hmac({ header: "X-Shopify-Hmac-Sha256", encoding: "base64", deliveryId: { header: "X-Shopify-Webhook-Id" } });
    const headers = { "x-shopify-hmac-sha256": await shopifySignature(body, "shop-secret"), "x-shopify-webhook-id": "w-1" };
    expect(await provider.verify(request(headers, body), ["shop-secret"], NOW)).toEqual({ ok: true, deliveryId: "w-1", eventType: null, contentDigest: await sha256(encoder.encode(body)) });
  });

  it("passes when any one of several separated signatures matches, ignoring other schemes", async () => {
    const provider = hmac({ header: "X-Sig", prefix: "v1=", separator: ",", deliveryId: "body-sha256" });
    const good = await sign("SHA-256", SECRET, encoder.encode(body), "hex");
    const headers = { "x-sig": `v0=${good},v1=${"00".repeat(32)}, v1=${good}` };
    expect((await provider.verify(request(headers, body), [SECRET], NOW)).ok).toBe(true);
  });

  it("signs the body as raw bytes, even when they are not valid UTF-8", async () => {
    const raw = new Uint8Array([0x7b, 0xff, 0xfe, 0x00, 0x7d]);
    const provider = hmac({ header: "X-Sig", deliveryId: "body-sha256" });
    const headers = { "x-sig": await sign("SHA-256", SECRET, raw, "hex") };
    expect((await provider.verify(request(headers, raw), [SECRET], NOW)).ok).toBe(true);
  });

  it("returns a null delivery id when the configured JSON path is absent, for the receiver to answer 400", async () => {
    const payload = '{"event":{}}';
    expect(await hmac(ACME).verify(request(await acmeHeaders(payload), payload), [SECRET], NOW)).toMatchObject({ ok: true, deliveryId: null });
  });

  it.each([
    ["an unknown placeholder", { signedContent: "{ts}.{body}" }],
    ["no {body}", { signedContent: "{timestamp}" }],
    ["{body} twice", { signedContent: "{timestamp}.{body}.{body}" }],
    ["a timestamp header the template does not sign", { signedContent: "{body}" }],
  ])("refuses at declaration a template with %s", (_name, override) => {
    expect(() => hmac({ ...ACME, ...override })).toThrow(TypeError);
  });

  it("refuses at declaration a {timestamp} without a timestamp header", () => {
    expect(() => hmac({ header: "X-Sig", signedContent: "{timestamp}.{body}", deliveryId: "body-sha256" })).toThrow(TypeError);
  });
});
