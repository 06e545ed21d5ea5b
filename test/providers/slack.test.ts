import { describe, expect, it } from "vitest";
import { slack } from "../../src/providers/slack";
import { deliveryRows, deliveryRow } from "../helpers/store-db";
import { nowSeconds, post, secretsOf, slackHeaders, unique } from "../helpers/provider-signers";

// Slack's worked example (api.slack.com/authentication/verifying-requests-from-slack).
const VECTOR = {
  secret: "8f742231b10e8888abcd99yyyzzz85a5",
  timestamp: 1531420618,
  body:
    "token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V&channel_name=foobar" +
    "&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack.com" +
    "%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c",
  signature: "v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503",
};

function vectorRequest(body = VECTOR.body) {
  return {
    url: "https://inbox.example.com/webhooks/slack",
    headers: new Headers({ "x-slack-signature": VECTOR.signature, "x-slack-request-timestamp": String(VECTOR.timestamp) }),
    body: new TextEncoder().encode(body),
  };
}

const eventCallback = (eventId: string) =>
  JSON.stringify({ token: "x", team_id: "T1", type: "event_callback", event_id: eventId, event_time: 1, event: { type: "app_mention", text: "hi" } });

describe("slack provider", () => {
  it("verifies Slack's documented example at its own timestamp", async () => {
    const result = await slack().verify(vectorRequest(), [VECTOR.secret], VECTOR.timestamp);
    expect(result).toEqual({ ok: true, deliveryId: null, eventType: null });
  });

  it("refuses Slack's documented example with one byte of the body changed", async () => {
    const result = await slack().verify(vectorRequest(VECTOR.body.replace("roadrunner", "roadrunnex")), [VECTOR.secret], VECTOR.timestamp);
    expect(result).toEqual({ ok: false, reason: "signature mismatch" });
  });

  it("refuses Slack's documented example once it is more than five minutes old, or before it was made", async () => {
    expect(await slack().verify(vectorRequest(), [VECTOR.secret], VECTOR.timestamp + 301)).toEqual({ ok: false, reason: "timestamp too old" });
    expect(await slack().verify(vectorRequest(), [VECTOR.secret], VECTOR.timestamp - 301)).toEqual({ ok: false, reason: "timestamp in the future" });
  });

  it("applies a per-source tolerance", async () => {
    expect((await slack({ toleranceSeconds: 900 }).verify(vectorRequest(), [VECTOR.secret], VECTOR.timestamp + 600)).ok).toBe(true);
  });

  it("stores an event under its event_id with the inner event type", async () => {
    const id = unique("Ev");
    const body = eventCallback(id);
    expect(await post("slack", body, await slackHeaders(body))).toEqual({ status: 200, json: { status: "stored", source: "slack", id } });
    expect((await deliveryRow("slack", id))?.event_type).toBe("app_mention");
  });

  it("answers duplicate for Slack's retry of the same event_id, signed afresh", async () => {
    const id = unique("Ev");
    const body = eventCallback(id);
    expect((await post("slack", body, await slackHeaders(body))).json.status).toBe("stored");
    const retry = await post("slack", body, { ...(await slackHeaders(body, { timestamp: nowSeconds() - 60 })), "x-slack-retry-num": "1" });
    expect(retry.json).toEqual({ status: "duplicate", source: "slack", id });
  });

  it("answers a signed url_verification with its challenge and stores nothing", async () => {
    const before = (await deliveryRows("slack")).length;
    const body = JSON.stringify({ token: "x", challenge: "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P", type: "url_verification" });
    const result = await post("slack", body, await slackHeaders(body));
    expect(result).toEqual({ status: 200, json: { challenge: "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P" } });
    expect(await deliveryRows("slack")).toHaveLength(before);
  });

  it("refuses an unsigned url_verification instead of echoing its challenge", async () => {
    const body = JSON.stringify({ challenge: "echo-me", type: "url_verification" });
    const result = await post("slack", body, await slackHeaders(body, { secret: "not-our-secret" }));
    expect(result.status).toBe(401);
    expect(JSON.stringify(result.json)).not.toContain("echo-me");
  });

  it("accepts a request signed with the previous secret (rotation)", async () => {
    const body = eventCallback(unique("Ev"));
    expect((await post("slack", body, await slackHeaders(body, { secret: secretsOf("SLACK_WEBHOOK_SECRET")[1] }))).status).toBe(200);
  });

  it("refuses a tampered body and stores nothing", async () => {
    const id = unique("Ev");
    const result = await post("slack", eventCallback(id).replace("hi", "bye"), await slackHeaders(eventCallback(id)));
    expect(result.status).toBe(401);
    expect(await deliveryRow("slack", id)).toBeNull();
  });

  it("refuses a request signed with a secret that is not configured", async () => {
    const body = eventCallback(unique("Ev"));
    expect((await post("slack", body, await slackHeaders(body, { secret: "some-other-app" }))).status).toBe(401);
  });

  it("refuses a request without X-Slack-Signature", async () => {
    const body = eventCallback(unique("Ev"));
    const { "x-slack-signature": _, ...rest } = await slackHeaders(body);
    expect((await post("slack", body, rest)).status).toBe(401);
  });

  it("refuses a request without X-Slack-Request-Timestamp", async () => {
    const body = eventCallback(unique("Ev"));
    const { "x-slack-request-timestamp": _, ...rest } = await slackHeaders(body);
    const result = await post("slack", body, rest);
    expect(result.status).toBe(401);
    expect(result.json.message).toContain("timestamp");
  });

  it.each([
    ["no v0= prefix", "a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503"],
    ["an unknown version", "v1=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503"],
    ["bad hex", `v0=${"zz".repeat(32)}`],
    ["a truncated digest", "v0=a2114d57"],
    ["a huge value", `v0=${"ab".repeat(5_000)}`],
  ])("refuses a malformed signature with %s as 401, not 500", async (_name, signature) => {
    const body = eventCallback(unique("Ev"));
    const result = await post("slack", body, { ...(await slackHeaders(body)), "x-slack-signature": signature });
    expect(result.status).toBe(401);
    expect(result.json.error).toBe("invalid_signature");
  });

  it("refuses a request more than five minutes old", async () => {
    const body = eventCallback(unique("Ev"));
    const result = await post("slack", body, await slackHeaders(body, { timestamp: nowSeconds() - 361 }));
    expect(result.status).toBe(401);
    expect(result.json.message).toContain("too old");
  });

  it("refuses a request stamped more than five minutes in the future", async () => {
    const body = eventCallback(unique("Ev"));
    const result = await post("slack", body, await slackHeaders(body, { timestamp: nowSeconds() + 361 }));
    expect(result.status).toBe(401);
    expect(result.json.message).toContain("in the future");
  });

  it("answers 400 for a verified request without an event_id", async () => {
    const body = JSON.stringify({ type: "event_callback", event: { type: "app_mention" } });
    expect((await post("slack", body, await slackHeaders(body))).status).toBe(400);
  });
});
