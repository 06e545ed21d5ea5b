import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { sql } from "../../../src/sql";
import { deliveryRow, exec } from "../../helpers/store-db";
import { storeDelivery } from "../../helpers/processing";
import { admin, adminWithEnv } from "./client";

const ADMIN_ROUTES = ["/stats", "/deliveries", "/deliveries/standard/msg_1", "/openapi.json"];

describe("admin authentication", () => {
  it.each(ADMIN_ROUTES)("refuses GET %s without a token with 401 unauthorized", async (path) => {
    const result = await admin(path, { token: null });
    expect(result.status).toBe(401);
    expect(result.json).toEqual({ error: "unauthorized", message: expect.any(String) });
  });

  it("refuses a wrong token with 401 and a WWW-Authenticate challenge", async () => {
    const result = await admin("/stats", { token: "test-admin-token-but-wrong" });
    expect(result.status).toBe(401);
    expect(result.json.error).toBe("unauthorized");
    expect(result.headers.get("www-authenticate")).toMatch(/^Bearer /);
  });

  it("refuses a prefix of the right token", async () => {
    expect((await admin("/stats", { token: "test-admin" })).status).toBe(401);
  });

  it("refuses the right token sent with another scheme", async () => {
    const result = await admin("/stats", { token: null, headers: { authorization: "Basic test-admin-token" } });
    expect(result.status).toBe(401);
  });

  it("refuses a malformed Authorization header with 401, not 400", async () => {
    const result = await admin("/stats", { token: null, headers: { authorization: "Bearer two words" } });
    expect(result).toMatchObject({ status: 401, json: { error: "unauthorized" } });
  });

  it("refuses a replay without a token before touching anything: the failed delivery stays failed", async () => {
    const ref = { source: "auth", id: "failed-before" };
    await storeDelivery(ref);
    await exec(sql`UPDATE deliveries SET status = 'failed', error = 'kept' WHERE id = ${ref.id}`);
    const bulk = await admin("/replay", { token: null, body: { status: "failed" } });
    const single = await admin(`/deliveries/${ref.source}/${ref.id}/replay`, { token: null, method: "POST" });
    expect([bulk.status, single.status]).toEqual([401, 401]);
    expect(await deliveryRow(ref.source, ref.id)).toMatchObject({ status: "failed", error: "kept" });
  });

  it("accepts the right token, with the scheme in any case", async () => {
    expect((await admin("/stats")).status).toBe(200);
    const lower = await admin("/stats", { token: null, headers: { authorization: "bearer test-admin-token" } });
    expect(lower.status).toBe(200);
  });

  it("answers 503 admin_disabled when ADMIN_TOKEN is unset, whatever the token", async () => {
    const result = await adminWithEnv("/stats", { ADMIN_TOKEN: undefined }, { token: "anything" });
    expect(result).toEqual({ status: 503, json: { error: "admin_disabled", message: expect.any(String) }, headers: expect.anything() });
  });

  it("answers 503 admin_disabled when ADMIN_TOKEN is empty, even to an empty bearer", async () => {
    const result = await adminWithEnv("/stats", { ADMIN_TOKEN: "" }, { token: null, headers: { authorization: "Bearer " } });
    expect(result.status).toBe(503);
    expect(result.json.error).toBe("admin_disabled");
  });

  it("answers unknown admin routes 404 once authenticated, and 401 before", async () => {
    expect((await admin("/nowhere", { token: null })).status).toBe(401);
    expect(await admin("/nowhere")).toMatchObject({ status: 404, json: { error: "not_found" } });
  });
});
