import { beforeEach, describe, expect, it } from "vitest";
import { sha256 } from "../../src/providers/crypto";
import { github } from "../../src/providers/github";
import { deliveryRow } from "../helpers/store-db";
import { githubSignature, post, secretsOf, unique } from "../helpers/provider-signers";

// A body of its own per test: GitHub's id is not signed, so the inbox also deduplicates on the body.
let body = "";
beforeEach(() => {
  body = JSON.stringify({ action: "opened", number: 1, nonce: unique("") });
});
const headers = async (delivery: string, payload = body, secret?: string): Promise<Record<string, string>> => ({
  "x-hub-signature-256": await githubSignature(payload, secret),
  "x-github-delivery": delivery,
  "x-github-event": "pull_request",
  "content-type": "application/json",
});

describe("github provider", () => {
  it("verifies GitHub's documented example byte for byte", async () => {
    const result = await github().verify(
      {
        url: "https://inbox.example.com/webhooks/github",
        headers: new Headers({
          "x-hub-signature-256": "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17",
          "x-github-delivery": "72d3162e-cc78-11e3-81ab-4c9367dc0958",
          "x-github-event": "push",
        }),
        body: new TextEncoder().encode("Hello, World!"),
      },
      ["It's a Secret to Everybody"],
      0,
    );
    expect(result).toEqual({
      ok: true,
      deliveryId: "72d3162e-cc78-11e3-81ab-4c9367dc0958",
      eventType: "push",
      contentDigest: await sha256(new TextEncoder().encode("Hello, World!")),
    });
  });

  it("stores a delivery signed by @octokit/webhooks-methods under X-GitHub-Delivery and X-GitHub-Event", async () => {
    const delivery = unique("");
    const result = await post("github", body, await headers(delivery));
    expect(result).toEqual({ status: 200, json: { status: "stored", source: "github", id: delivery } });
    expect((await deliveryRow("github", delivery))?.event_type).toBe("pull_request");
  });

  it("answers duplicate for a redelivery, which keeps X-GitHub-Delivery", async () => {
    const delivery = unique("");
    expect((await post("github", body, await headers(delivery))).json.status).toBe("stored");
    expect(await post("github", body, await headers(delivery))).toEqual({ status: 200, json: { status: "duplicate", source: "github", id: delivery } });
  });

  it("accepts a delivery signed with the previous secret (rotation)", async () => {
    const result = await post("github", body, await headers(unique(""), body, secretsOf("GITHUB_WEBHOOK_SECRET")[1]));
    expect(result.status).toBe(200);
  });

  it("refuses a tampered body and stores nothing", async () => {
    const delivery = unique("");
    const result = await post("github", body.replace("opened", "closed"), await headers(delivery));
    expect(result.status).toBe(401);
    expect(await deliveryRow("github", delivery)).toBeNull();
  });

  it("refuses a delivery signed with a secret that is not configured", async () => {
    expect((await post("github", body, await headers(unique(""), body, "not-our-secret"))).status).toBe(401);
  });

  it("refuses a delivery with only the legacy SHA-1 X-Hub-Signature", async () => {
    const { "x-hub-signature-256": _, ...rest } = await headers(unique(""));
    const result = await post("github", body, { ...rest, "x-hub-signature": `sha1=${"ab".repeat(20)}` });
    expect(result.status).toBe(401);
    expect(result.json.message).toContain("missing X-Hub-Signature-256");
  });

  it.each([
    ["no sha256= prefix", "757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"],
    ["bad hex", `sha256=${"zz".repeat(32)}`],
    ["an odd-length digest", `sha256=${"a".repeat(63)}`],
    ["a SHA-1 length digest", `sha256=${"ab".repeat(20)}`],
    ["a huge value", `sha256=${"ab".repeat(5_000)}`],
  ])("refuses a malformed signature with %s as 401, not 500", async (_name, signature) => {
    const result = await post("github", body, { ...(await headers(unique(""))), "x-hub-signature-256": signature });
    expect(result.status).toBe(401);
    expect(result.json.error).toBe("invalid_signature");
  });

  it("answers 400 for a verified delivery without X-GitHub-Delivery", async () => {
    const { "x-github-delivery": _, ...rest } = await headers("unused");
    const result = await post("github", body, rest);
    expect(result).toEqual({ status: 400, json: { error: "missing_delivery_id", message: expect.any(String) } });
  });
});
