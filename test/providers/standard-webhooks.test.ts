import { describe, expect, it } from "vitest";
import { standardWebhooks } from "../../src/providers/standard-webhooks";
import { deliveryRow } from "../helpers/store-db";
import { post, postWithEnv, unique } from "../helpers/provider-signers";
import { standardHeaders } from "../helpers/signers";

// standard-webhooks libraries/javascript/src/webhook.test.ts, "sign function works".
const VECTOR = {
  secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
  id: "msg_p5jXN8AQM9LWM0D4loKWxJek",
  timestamp: 1614265330,
  body: '{"test": 2432232314}',
  signature: "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=",
};
const OTHER_SECRET = "whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD";

function vectorRequest(signature = VECTOR.signature, body = VECTOR.body) {
  return {
    url: "https://inbox.example.com/webhooks/standard",
    headers: new Headers({ "webhook-id": VECTOR.id, "webhook-timestamp": String(VECTOR.timestamp), "webhook-signature": signature }),
    body: new TextEncoder().encode(body),
  };
}

describe("standard webhooks provider", () => {
  it("verifies the Standard Webhooks library's test vector byte for byte", async () => {
    const result = await standardWebhooks().verify(vectorRequest(), [VECTOR.secret], VECTOR.timestamp);
    expect(result).toEqual({ ok: true, deliveryId: VECTOR.id, eventType: null });
  });

  it("passes the vector among invalid v1 and unknown v2 and v1a signatures", async () => {
    const header = `v1,Ceo5qEr07ixe2NLpvHk3FH9bwy/WavXrAFQ/9tdO6mc= v2,${VECTOR.signature.slice(3)} v1a,abc ${VECTOR.signature}`;
    expect((await standardWebhooks().verify(vectorRequest(header), [VECTOR.secret], VECTOR.timestamp)).ok).toBe(true);
  });

  it("refuses the vector's signature when it is only offered as v2", async () => {
    const result = await standardWebhooks().verify(vectorRequest(VECTOR.signature.replace("v1,", "v2,")), [VECTOR.secret], VECTOR.timestamp);
    expect(result).toEqual({ ok: false, reason: "no v1 signature" });
  });

  it("refuses the vector with a changed body", async () => {
    const result = await standardWebhooks().verify(vectorRequest(undefined, '{"test": 2432232315}'), [VECTOR.secret], VECTOR.timestamp);
    expect(result).toEqual({ ok: false, reason: "signature mismatch" });
  });

  it("refuses the vector more than five minutes before or after its timestamp", async () => {
    expect(await standardWebhooks().verify(vectorRequest(), [VECTOR.secret], VECTOR.timestamp + 301)).toEqual({ ok: false, reason: "timestamp too old" });
    expect(await standardWebhooks().verify(vectorRequest(), [VECTOR.secret], VECTOR.timestamp - 301)).toEqual({ ok: false, reason: "timestamp in the future" });
  });

  it("applies a per-source tolerance", async () => {
    expect((await standardWebhooks({ toleranceSeconds: 600 }).verify(vectorRequest(), [VECTOR.secret], VECTOR.timestamp - 500)).ok).toBe(true);
  });

  it("answers duplicate for the same webhook-id signed again by the standardwebhooks library", async () => {
    const id = unique("msg_");
    const first = await post("standard", "{}", standardHeaders("{}", { id }));
    const retry = await post("standard", "{}", standardHeaders("{}", { id, at: new Date(Date.now() - 30_000) }));
    expect([first.json.status, retry.json.status]).toEqual(["stored", "duplicate"]);
  });

  it("accepts a delivery signed with the previous secret (rotation)", async () => {
    const id = unique("msg_");
    const headers = standardHeaders("{}", { id, secret: OTHER_SECRET });
    const result = await postWithEnv("standard", "{}", headers, { STANDARD_WEBHOOK_SECRET_PREVIOUS: OTHER_SECRET });
    expect(result).toEqual({ status: 200, json: { status: "stored", source: "standard", id } });
  });

  it("refuses a delivery signed with a secret that is not configured", async () => {
    const result = await post("standard", "{}", standardHeaders("{}", { secret: OTHER_SECRET }));
    expect(result.status).toBe(401);
  });

  it("refuses a timestamp more than five minutes in the future", async () => {
    const result = await post("standard", "{}", standardHeaders("{}", { at: new Date(Date.now() + 6 * 60_000) }));
    expect(result.status).toBe(401);
    expect(result.json.message).toContain("in the future");
  });

  it("refuses a delivery without webhook-id, which is part of what is signed", async () => {
    const { "webhook-id": _, ...rest } = standardHeaders("{}");
    expect((await post("standard", "{}", rest)).status).toBe(401);
  });

  it.each([
    ["bad base64", "v1,!!!notbase64!!!"],
    ["no comma", "v1"],
    ["no version prefix", "garbage"],
    ["a huge value", `v1,${"A".repeat(8_000)}`],
  ])("refuses a malformed signature with %s as 401, not 500", async (_name, signature) => {
    const id = unique("msg_");
    const result = await post("standard", "{}", { ...standardHeaders("{}", { id }), "webhook-signature": signature });
    expect(result.status).toBe(401);
    expect(await deliveryRow("standard", id)).toBeNull();
  });

  it("refuses a malformed timestamp as 401, not 500", async () => {
    const result = await post("standard", "{}", { ...standardHeaders("{}"), "webhook-timestamp": "1e9" });
    expect(result.status).toBe(401);
    expect(result.json.message).toContain("timestamp");
  });
});
