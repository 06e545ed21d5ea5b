import { describe, expect, it } from "vitest";
import { deliveryRow } from "../helpers/store-db";
import { post, postWithEnv, svixHeaders, unique } from "../helpers/provider-signers";

const body = '{"type":"invoice.paid","data":{"amount":100}}';
const ROTATED = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

describe("svix source", () => {
  it("stores a delivery signed by the svix SDK under svix-id with the body's type", async () => {
    const id = unique("msg_");
    expect(await post("svix", body, svixHeaders(body, { id }))).toEqual({ status: 200, json: { status: "stored", source: "svix", id } });
    expect((await deliveryRow("svix", id))?.event_type).toBe("invoice.paid");
  });

  it("answers duplicate for Svix's retry of the same svix-id", async () => {
    const id = unique("msg_");
    expect((await post("svix", body, svixHeaders(body, { id }))).json.status).toBe("stored");
    expect((await post("svix", body, svixHeaders(body, { id, at: new Date(Date.now() - 5_000) }))).json.status).toBe("duplicate");
  });

  it("accepts a delivery signed with the previous secret (rotation)", async () => {
    const headers = svixHeaders(body, { secret: ROTATED });
    const result = await postWithEnv("svix", body, headers, { SVIX_WEBHOOK_SECRET_PREVIOUS: ROTATED });
    expect(result.status).toBe(200);
  });

  it("refuses a tampered body and stores nothing", async () => {
    const id = unique("msg_");
    expect((await post("svix", body.replace("100", "1"), svixHeaders(body, { id }))).status).toBe(401);
    expect(await deliveryRow("svix", id)).toBeNull();
  });

  it("refuses a delivery signed with a secret that is not configured", async () => {
    expect((await post("svix", body, svixHeaders(body, { secret: ROTATED }))).status).toBe(401);
  });

  it("refuses webhook-* headers on the svix source, which reads svix-*", async () => {
    const { "svix-id": id, "svix-timestamp": timestamp, "svix-signature": signature } = svixHeaders(body);
    const result = await post("svix", body, { "webhook-id": id!, "webhook-timestamp": timestamp!, "webhook-signature": signature! });
    expect(result.status).toBe(401);
    expect(result.json.message).toContain("missing svix-id");
  });

  it("refuses a malformed svix-signature as 401, not 500", async () => {
    expect((await post("svix", body, { ...svixHeaders(body), "svix-signature": "v1,@@@" })).status).toBe(401);
  });

  it("refuses a timestamp more than five minutes old", async () => {
    const result = await post("svix", body, svixHeaders(body, { at: new Date(Date.now() - 6 * 60_000) }));
    expect(result.status).toBe(401);
    expect(result.json.message).toContain("too old");
  });

  it("refuses a timestamp more than five minutes in the future", async () => {
    const result = await post("svix", body, svixHeaders(body, { at: new Date(Date.now() + 6 * 60_000) }));
    expect(result.status).toBe(401);
    expect(result.json.message).toContain("in the future");
  });
});
