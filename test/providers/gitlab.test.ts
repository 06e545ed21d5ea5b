import { beforeEach, describe, expect, it } from "vitest";
import { gitlab } from "../../src/providers/gitlab";
import { deliveryRow } from "../helpers/store-db";
import { post, secretsOf, unique } from "../helpers/provider-signers";

// A body of its own per test: GitLab's id is not signed, so the inbox also deduplicates on the body.
let body = "";
beforeEach(() => {
  body = JSON.stringify({ object_kind: "push", ref: "refs/heads/main", checkout_sha: unique("") });
});
const [token, rotatedToken] = secretsOf("GITLAB_WEBHOOK_SECRET");
const headers = (idempotencyKey: string, secret = token!): Record<string, string> => ({
  "x-gitlab-token": secret,
  "idempotency-key": idempotencyKey,
  "x-gitlab-event-uuid": `uuid-${idempotencyKey}`,
  "x-gitlab-event": "Push Hook",
  "content-type": "application/json",
});

describe("gitlab provider", () => {
  it("stores a delivery with the right token under Idempotency-Key with X-Gitlab-Event as its type", async () => {
    const id = unique("");
    expect(await post("gitlab", body, headers(id))).toEqual({ status: 200, json: { status: "stored", source: "gitlab", id } });
    expect((await deliveryRow("gitlab", id))?.event_type).toBe("Push Hook");
  });

  it("answers duplicate when GitLab retries with the same Idempotency-Key", async () => {
    const id = unique("");
    expect((await post("gitlab", body, headers(id))).json.status).toBe("stored");
    expect((await post("gitlab", body, headers(id))).json).toEqual({ status: "duplicate", source: "gitlab", id });
  });

  it("falls back to X-Gitlab-Event-UUID on GitLab versions without Idempotency-Key", async () => {
    const { "idempotency-key": _, ...rest } = headers("unused");
    const uuid = unique("");
    expect((await post("gitlab", body, { ...rest, "x-gitlab-event-uuid": uuid })).json).toEqual({ status: "stored", source: "gitlab", id: uuid });
  });

  it("accepts the previous token (rotation)", async () => {
    expect((await post("gitlab", body, headers(unique(""), rotatedToken))).status).toBe(200);
  });

  it("refuses a token that is not configured", async () => {
    const result = await post("gitlab", body, headers(unique(""), "guessed-token"));
    expect(result.status).toBe(401);
    expect(result.json.message).toContain("token mismatch");
  });

  it("refuses a token that is a prefix of the configured one", async () => {
    expect((await post("gitlab", body, headers(unique(""), token!.slice(0, -1)))).status).toBe(401);
  });

  it("refuses a delivery without X-Gitlab-Token", async () => {
    const { "x-gitlab-token": _, ...rest } = headers(unique(""));
    expect((await post("gitlab", body, rest)).status).toBe(401);
  });

  it("refuses a huge X-Gitlab-Token as 401, not 500", async () => {
    expect((await post("gitlab", body, headers(unique(""), "t".repeat(10_000)))).status).toBe(401);
  });

  it("answers 400 for an authenticated delivery with neither id header", async () => {
    const { "idempotency-key": _, "x-gitlab-event-uuid": __, ...rest } = headers("unused");
    expect((await post("gitlab", body, rest)).status).toBe(400);
  });

  it("leaves the body unauthenticated: GitLab's token does not sign it, so a changed body still passes", async () => {
    // Documented limitation of GitLab's scheme, pinned so nobody mistakes it for a signature.
    const request = { url: "https://inbox.example.com/webhooks/gitlab", headers: new Headers(headers("k")), body: new TextEncoder().encode("{}") };
    expect((await gitlab().verify(request, [token!], 0)).ok).toBe(true);
  });
});
