import { describe, expect, it } from "vitest";
import { toHex } from "../../src/providers/crypto";
import { twilio } from "../../src/providers/twilio";
import { deliveryRow } from "../helpers/store-db";
import { BASE_URL, post, postWithEnv, secretsOf, sha256Hex, twilioSignature, unique } from "../helpers/provider-signers";

// twilio-node spec/validation.spec.js
const TOKEN = "12345";
const URL_ = "https://mycompany.com/myapp.php?foo=1&bar=2";
const PARAMS = { CallSid: "CA1234567890ABCDE", Caller: "+14158675309", Digits: "1234", From: "+14158675309", To: "+18005551212" };
const JSON_BODY = '{"property": "value", "boolean": true}';
const JSON_BODY_SHA256 = "0a1ff7634d9ab3b95db5c9a2dfe9416e41502b283a80c7cf19632632f96e6620";

const FORM = { "content-type": "application/x-www-form-urlencoded" };
const form = (params: Record<string, string> | [string, string][]) => new URLSearchParams(params).toString();

function verify(url: string, signature: string, body: string, headers: Record<string, string> = FORM) {
  const request = { url, headers: new Headers({ ...headers, "x-twilio-signature": signature }), body: new TextEncoder().encode(body) };
  return twilio().verify(request, [TOKEN], 0);
}

const TWILIO_URL = `${BASE_URL}/webhooks/twilio`;
const message = (sid: string) => ({ MessageSid: sid, From: "+14158675309", To: "+18005551212", Body: "Hello & goodbye +1" });

describe("twilio provider", () => {
  it("verifies twilio-node's form vector byte for byte", async () => {
    expect((await verify(URL_, "RSOYDt4T1cUTdK1PDd93/VVr8B8=", form(PARAMS))).ok).toBe(true);
  });

  it("verifies twilio-node's JSON vector, whose URL carries the body's bodySHA256", async () => {
    const result = await verify(`${URL_}&bodySHA256=${JSON_BODY_SHA256}`, "a9nBmqA0ju/hNViExpshrM61xv4=", JSON_BODY, { "content-type": "application/json" });
    expect(result.ok).toBe(true);
    // Without an idempotency token the id is the hex of the signed content's digest.
    if (result.ok) expect(result.deliveryId).toBe(toHex(result.contentDigest!));
  });

  it("digests the signed content canonically: reordered or re-encoded parameters give the same digest", async () => {
    const reordered = new URLSearchParams(Object.entries(PARAMS).reverse()).toString().replaceAll("%2B", "%2b");
    expect(reordered).not.toBe(form(PARAMS));
    const [a, b] = [await verify(URL_, "RSOYDt4T1cUTdK1PDd93/VVr8B8=", form(PARAMS)), await verify(URL_, "RSOYDt4T1cUTdK1PDd93/VVr8B8=", reordered)];
    expect(a.ok && b.ok).toBe(true);
    if (a.ok && b.ok) {
      expect(b.contentDigest).toEqual(a.contentDigest);
      expect(b.deliveryId).toBe(a.deliveryId);
    }
    const other = await verify(URL_, "RSOYDt4T1cUTdK1PDd93/VVr8B8=", form(PARAMS), { ...FORM });
    const otherUrl = await verify(`${URL_.replace(".com", ".com:1234")}`, "RSOYDt4T1cUTdK1PDd93/VVr8B8=", form(PARAMS));
    // The port Twilio may or may not sign does not make a new delivery either.
    expect(other.ok && otherUrl.ok).toBe(true);
    if (other.ok && otherUrl.ok) expect(otherUrl.contentDigest).toEqual(other.contentDigest);
  });

  it("refuses twilio-node's JSON vector when the body no longer matches bodySHA256", async () => {
    const result = await verify(`${URL_}&bodySHA256=${JSON_BODY_SHA256}`, "a9nBmqA0ju/hNViExpshrM61xv4=", JSON_BODY.replace("value", "other"), {
      "content-type": "application/json",
    });
    expect(result).toEqual({ ok: false, reason: "bodySHA256 does not match the body" });
  });

  it("refuses a JSON body whose URL has no bodySHA256, since nothing would sign the body", async () => {
    const result = await verify(URL_, await twilioSignature(URL_, {}, TOKEN), JSON_BODY, { "content-type": "application/json" });
    expect(result.ok).toBe(false);
  });

  it("verifies twilio-node's vector when the URL has a port Twilio did not sign", async () => {
    expect((await verify(URL_.replace(".com", ".com:1234"), "RSOYDt4T1cUTdK1PDd93/VVr8B8=", form(PARAMS))).ok).toBe(true);
  });

  it("verifies twilio-node's vectors signed with the scheme's default port added", async () => {
    expect((await verify(URL_, "kvajT1Ptam85bY51eRf/AJRuM3w=", form(PARAMS))).ok).toBe(true);
    expect((await verify(URL_.replace("https", "http"), "0ZXoZLH/DfblKGATFgpif+LLRf4=", form(PARAMS))).ok).toBe(true);
  });

  it("verifies twilio-node's vector for a repeated parameter, in either order", async () => {
    const name = "MessagingBinding.Address";
    expect((await verify(URL_, "83O6e2vORAoJHUNzJjDWN1jz+BA=", form([[name, "+1325xxxxxxx"], [name, "+1415xxxxxxx"]]))).ok).toBe(true);
    expect((await verify(URL_, "83O6e2vORAoJHUNzJjDWN1jz+BA=", form([[name, "+1415xxxxxxx"], [name, "+1325xxxxxxx"]]))).ok).toBe(true);
  });

  it("refuses twilio-node's form vector with one parameter changed", async () => {
    expect(await verify(URL_, "RSOYDt4T1cUTdK1PDd93/VVr8B8=", form({ ...PARAMS, Digits: "1235" }))).toEqual({ ok: false, reason: "signature mismatch" });
  });

  it("refuses twilio-node's form vector at another URL", async () => {
    expect((await verify(`${URL_}&extra=1`, "RSOYDt4T1cUTdK1PDd93/VVr8B8=", form(PARAMS))).ok).toBe(false);
  });

  it("answers stored, then duplicate, for Twilio's retry with the same idempotency token", async () => {
    const token = unique("idem-");
    const params = message(unique("SM"));
    const headers = { ...FORM, "x-twilio-signature": await twilioSignature(TWILIO_URL, params), "i-twilio-idempotency-token": token };
    expect(await post("twilio", form(params), headers)).toEqual({ status: 200, json: { status: "stored", source: "twilio", id: token } });
    expect(await post("twilio", form(params), headers)).toEqual({ status: 200, json: { status: "duplicate", source: "twilio", id: token } });
  });

  it("falls back to a digest of the signed content as the delivery id without an idempotency token, the same for a reordered copy", async () => {
    const params = message(unique("SM"));
    const headers = { ...FORM, "x-twilio-signature": await twilioSignature(TWILIO_URL, params) };
    const result = await post("twilio", form(params), headers);
    expect(result.json).toMatchObject({ status: "stored", source: "twilio" });
    expect(result.json.id).toMatch(/^[0-9a-f]{64}$/);
    const reordered = new URLSearchParams(Object.entries(params).reverse()).toString();
    expect(await post("twilio", reordered, headers)).toEqual({ status: 200, json: { status: "duplicate", source: "twilio", id: result.json.id } });
  });

  it("answers duplicate for the same captured request with its parameters reordered and re-encoded under a fresh idempotency token (issue 23)", async () => {
    const params = message(unique("SM"));
    const signature = await twilioSignature(TWILIO_URL, params);
    const first = unique("idem-");
    expect((await post("twilio", form(params), { ...FORM, "x-twilio-signature": signature, "i-twilio-idempotency-token": first })).json.status).toBe("stored");
    // Same parameters, reversed, spaces as %20 instead of +: other bytes, the same signed content.
    const replayed = Object.entries(params)
      .reverse()
      .map(([name, value]) => `${encodeURIComponent(name)}=${encodeURIComponent(value)}`)
      .join("&");
    expect(replayed).not.toBe(form(params));
    const replayId = unique("idem-");
    const answer = await post("twilio", replayed, { ...FORM, "x-twilio-signature": signature, "i-twilio-idempotency-token": replayId });
    expect(answer).toEqual({ status: 200, json: { status: "duplicate", source: "twilio", id: replayId } });
    expect(await deliveryRow("twilio", replayId)).toBeNull();
  });

  it("stores a signed JSON delivery posted to a URL with bodySHA256", async () => {
    const body = JSON.stringify({ sid: unique("EV"), type: "com.twilio.messaging.message.delivered" });
    const url = `${TWILIO_URL}?bodySHA256=${await sha256Hex(body)}`;
    const token = unique("idem-");
    const headers = { "content-type": "application/json", "x-twilio-signature": await twilioSignature(url, {}), "i-twilio-idempotency-token": token };
    const result = await post("twilio", body, headers, `?bodySHA256=${await sha256Hex(body)}`);
    expect(result).toEqual({ status: 200, json: { status: "stored", source: "twilio", id: token } });
    expect(await deliveryRow("twilio", token)).not.toBeNull();
  });

  it("accepts a delivery signed with the previous auth token (rotation)", async () => {
    const params = message(unique("SM"));
    const signature = await twilioSignature(TWILIO_URL, params, secretsOf("TWILIO_WEBHOOK_SECRET")[1]);
    expect((await post("twilio", form(params), { ...FORM, "x-twilio-signature": signature })).status).toBe(200);
  });

  it("verifies against PUBLIC_BASE_URL, the URL Twilio called, behind a proxy", async () => {
    const params = message(unique("SM"));
    const signature = await twilioSignature("https://hooks.example.org/webhooks/twilio", params);
    const headers = { ...FORM, "x-twilio-signature": signature };
    expect((await post("twilio", form(params), headers)).status).toBe(401);
    expect((await postWithEnv("twilio", form(params), headers, { PUBLIC_BASE_URL: "https://hooks.example.org" })).status).toBe(200);
  });

  it("refuses a tampered form body and stores nothing", async () => {
    const token = unique("idem-");
    const params = message(unique("SM"));
    const headers = { ...FORM, "x-twilio-signature": await twilioSignature(TWILIO_URL, params), "i-twilio-idempotency-token": token };
    expect((await post("twilio", form({ ...params, Body: "changed" }), headers)).status).toBe(401);
    expect(await deliveryRow("twilio", token)).toBeNull();
  });

  it("refuses a delivery signed with an auth token that is not configured", async () => {
    const params = message(unique("SM"));
    const signature = await twilioSignature(TWILIO_URL, params, "another-account");
    expect((await post("twilio", form(params), { ...FORM, "x-twilio-signature": signature })).status).toBe(401);
  });

  it("refuses a delivery without X-Twilio-Signature", async () => {
    const result = await post("twilio", form(message(unique("SM"))), FORM);
    expect(result.status).toBe(401);
    expect(result.json.message).toContain("missing X-Twilio-Signature");
  });

  it.each([
    ["bad base64", "%%%not-base64%%%"],
    ["a SHA-256 length digest", btoa("x".repeat(32))],
    ["a huge value", "A".repeat(8_000)],
  ])("refuses a malformed signature with %s as 401, not 500", async (_name, signature) => {
    const result = await post("twilio", form(message(unique("SM"))), { ...FORM, "x-twilio-signature": signature });
    expect(result.status).toBe(401);
    expect(result.json.error).toBe("invalid_signature");
  });
});
