// A source's secret is one value taken verbatim, plus an optional previous one during a rotation.
import { describe, expect, it } from "vitest";
import { secretsFor } from "../../src/config/secrets";
import { githubSignature, postWithEnv, unique } from "../helpers/provider-signers";

/** A GitHub delivery signed with `secret`, posted with the GitHub secret vars set to `vars`. */
async function postGithub(secret: string, vars: { GITHUB_WEBHOOK_SECRET?: string; GITHUB_WEBHOOK_SECRET_PREVIOUS?: string }) {
  const body = JSON.stringify({ action: "opened", nonce: unique("") });
  const headers = { "x-hub-signature-256": await githubSignature(body, secret), "x-github-delivery": unique(""), "x-github-event": "push" };
  return postWithEnv("github", body, headers, { GITHUB_WEBHOOK_SECRET: undefined, GITHUB_WEBHOOK_SECRET_PREVIOUS: undefined, ...vars });
}

describe("secretsFor", () => {
  it("takes the secret verbatim, spaces, commas and surrounding blanks included", () => {
    expect(secretsFor({ GITHUB_WEBHOOK_SECRET: " my secret, phrase " }, "github")).toEqual([" my secret, phrase "]);
  });

  it("adds the previous secret after the current one", () => {
    expect(secretsFor({ MY_SHOP_WEBHOOK_SECRET: "new", MY_SHOP_WEBHOOK_SECRET_PREVIOUS: "old" }, "my-shop")).toEqual(["new", "old"]);
  });

  it("counts an empty or non-string var as unset", () => {
    expect(secretsFor({ GITHUB_WEBHOOK_SECRET: "", GITHUB_WEBHOOK_SECRET_PREVIOUS: "" }, "github")).toEqual([]);
    expect(secretsFor({ GITHUB_WEBHOOK_SECRET: "new", GITHUB_WEBHOOK_SECRET_PREVIOUS: 42 }, "github")).toEqual(["new"]);
  });
});

describe("the receiver's secrets", () => {
  const PHRASE = "my secret, phrase";

  it("refuses 401 a signature made with a fragment of a secret that contains spaces and commas", async () => {
    for (const fragment of ["my", "secret", "phrase", "my secret"]) {
      const result = await postGithub(fragment, { GITHUB_WEBHOOK_SECRET: PHRASE });
      expect(result.status, fragment).toBe(401);
    }
  });

  it("accepts a signature made with the whole secret, spaces and commas included", async () => {
    expect((await postGithub(PHRASE, { GITHUB_WEBHOOK_SECRET: PHRASE })).json.status).toBe("stored");
  });

  it("accepts both the current and the previous secret while both are set", async () => {
    const vars = { GITHUB_WEBHOOK_SECRET: "new secret", GITHUB_WEBHOOK_SECRET_PREVIOUS: "old secret" };
    expect((await postGithub("new secret", vars)).status).toBe(200);
    expect((await postGithub("old secret", vars)).status).toBe(200);
    expect((await postGithub("new", vars)).status).toBe(401);
  });

  it("ignores an empty previous secret: the current one still verifies (an empty HMAC key would not even import)", async () => {
    const result = await postGithub("new secret", { GITHUB_WEBHOOK_SECRET: "new secret", GITHUB_WEBHOOK_SECRET_PREVIOUS: "" });
    expect(result.json.status).toBe("stored");
  });

  it("answers 503 source_not_configured when both vars are empty", async () => {
    const result = await postGithub("anything", { GITHUB_WEBHOOK_SECRET: "", GITHUB_WEBHOOK_SECRET_PREVIOUS: "" });
    expect(result).toEqual({ status: 503, json: { error: "source_not_configured", message: expect.any(String) } });
  });
});
