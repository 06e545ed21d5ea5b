// The forwarding vars, read with the others: a bad one is config_invalid naming the var, never its value.
import { destinationOf } from "../../src/config/forwarding";
import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config";
import { problemsOf } from "../helpers/config-problems";
import worker from "../../src/index";

const SECRET = "whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD";

describe("forwarding by configuration", () => {
  it("takes no forward var from a developer's own .dev.vars into the tests (test/vitest.config.ts sets each empty)", () => {
    const forwardVars = Object.entries(env).filter(([name, value]) => name.includes("_FORWARD_") && value !== "");
    expect(forwardVars.map(([name]) => name)).toEqual([]);
    expect(loadConfig(env).forwarding).toEqual({ byPrefix: {} });
  });

  it("forwards nothing when no <SOURCE>_FORWARD_URL is set, or it is empty", () => {
    expect(loadConfig({}).forwarding).toEqual({ byPrefix: {} });
    expect(loadConfig({ STRIPE_FORWARD_URL: "", STRIPE_FORWARD_TIMEOUT_SECONDS: "" }).forwarding).toEqual({ byPrefix: {} });
  });

  it("reads a source's destination with the defaults: 30 s, 10 in flight", () => {
    const { forwarding } = loadConfig({ STRIPE_FORWARD_URL: "https://billing.example.com/webhooks", STRIPE_FORWARD_SECRET: SECRET });
    expect(forwarding.byPrefix).toEqual({
      STRIPE: [
        {
          name: "forward",
          url: "https://billing.example.com/webhooks",
          key: expect.any(Uint8Array),
          timeoutSeconds: 30,
          concurrency: 10,
          maxAttempts: 5,
          retryBaseSeconds: 2,
          breaker: { failures: 5, openSeconds: 30 },
          filterJson: null,
        },
      ],
    });
  });

  it("reads the optional timeout and concurrency", () => {
    const vars = { GITHUB_FORWARD_URL: "http://localhost:4000/gh", GITHUB_FORWARD_SECRET: SECRET, GITHUB_FORWARD_TIMEOUT_SECONDS: "5", GITHUB_FORWARD_CONCURRENCY: "3" };
    expect(loadConfig(vars).forwarding.byPrefix.GITHUB![0]).toMatchObject({ timeoutSeconds: 5, concurrency: 3 });
  });

  it("refuses a URL that is not https:// (but for this machine), naming the var", () => {
    expect(problemsOf({ STRIPE_FORWARD_URL: "http://billing.example.com/", STRIPE_FORWARD_SECRET: SECRET })).toEqual([
      { variables: ["STRIPE_FORWARD_URL"], problem: expect.stringContaining("https://") },
    ]);
  });

  it("refuses a URL without its secret, and a secret that is not whsec_ + base64", () => {
    expect(problemsOf({ STRIPE_FORWARD_URL: "https://billing.example.com/" })).toEqual([
      { variables: ["STRIPE_FORWARD_SECRET"], problem: expect.stringContaining("must be set when STRIPE_FORWARD_URL is") },
    ]);
    expect(problemsOf({ STRIPE_FORWARD_URL: "https://billing.example.com/", STRIPE_FORWARD_SECRET: "hunter2-plain" })).toEqual([
      { variables: ["STRIPE_FORWARD_SECRET"], problem: expect.stringContaining("whsec_") },
    ]);
  });

  it("refuses a timeout above half of LEASE_SECONDS, naming both vars, the default one included", () => {
    const base = { STRIPE_FORWARD_URL: "https://billing.example.com/", STRIPE_FORWARD_SECRET: SECRET };
    expect(problemsOf({ ...base, STRIPE_FORWARD_TIMEOUT_SECONDS: "31" })).toEqual([
      { variables: ["STRIPE_FORWARD_TIMEOUT_SECONDS", "LEASE_SECONDS"], problem: expect.stringContaining("half of LEASE_SECONDS") },
    ]);
    expect(problemsOf({ ...base, LEASE_SECONDS: "40" })[0]!.variables).toEqual(["STRIPE_FORWARD_TIMEOUT_SECONDS", "LEASE_SECONDS"]);
    expect(loadConfig({ ...base, LEASE_SECONDS: "40", STRIPE_FORWARD_TIMEOUT_SECONDS: "20" }).forwarding.byPrefix.STRIPE![0]!.timeoutSeconds).toBe(20);
    expect(problemsOf({ ...base, HANDLER_TIMEOUT_SECONDS: "20" })[0]!.variables).toEqual(["STRIPE_FORWARD_TIMEOUT_SECONDS", "HANDLER_TIMEOUT_SECONDS"]);
  });

  it("refuses a malformed timeout or concurrency", () => {
    const base = { STRIPE_FORWARD_URL: "https://billing.example.com/", STRIPE_FORWARD_SECRET: SECRET };
    expect(problemsOf({ ...base, STRIPE_FORWARD_TIMEOUT_SECONDS: "0" })[0]!.variables).toEqual(["STRIPE_FORWARD_TIMEOUT_SECONDS"]);
    expect(problemsOf({ ...base, STRIPE_FORWARD_CONCURRENCY: "ten" })[0]!.variables).toEqual(["STRIPE_FORWARD_CONCURRENCY"]);
    expect(problemsOf({ ...base, STRIPE_FORWARD_CONCURRENCY: "0" })[0]!.variables).toEqual(["STRIPE_FORWARD_CONCURRENCY"]);
  });

  it("checks the vars of a destination no source has (a forward() handler's), and lists them with the others' problems", () => {
    expect(problemsOf({ BILLING_FORWARD_URL: "https://billing.example.com/", BILLING_FORWARD_SECRET: "nope", MAX_ATTEMPTS: "x" })).toEqual([
      { variables: ["MAX_ATTEMPTS"], problem: expect.any(String) },
      { variables: ["BILLING_FORWARD_SECRET"], problem: expect.stringContaining("whsec_") },
    ]);
    // Read, but no source's: only a source named `billing` would forward through it.
    const { forwarding } = loadConfig({ BILLING_FORWARD_URL: "https://billing.example.com/", BILLING_FORWARD_SECRET: SECRET });
    expect(Object.keys(forwarding.byPrefix)).toEqual(["BILLING"]);
    expect(destinationOf(forwarding, "stripe")).toBeUndefined();
  });

  it("answers /health 503 naming the forwarding var, and never its value", async () => {
    const badEnv = { ...env, STRIPE_FORWARD_URL: "http://intranet-7f3a.example/hooks", STRIPE_FORWARD_SECRET: "whsec_leak-9c2e" } as Env;
    const ctx = createExecutionContext();
    const response = await worker.fetch(new Request("https://inbox.example.com/health"), badEnv, ctx);
    await waitOnExecutionContext(ctx);
    expect(response.status).toBe(503);
    const text = await response.text();
    expect(JSON.parse(text)).toEqual({
      status: "config_invalid",
      problems: [
        { variables: ["STRIPE_FORWARD_URL"], problem: expect.any(String) },
        { variables: ["STRIPE_FORWARD_SECRET"], problem: expect.any(String) },
      ],
    });
    expect(text).not.toContain("intranet-7f3a");
    expect(text).not.toContain("leak-9c2e");
  });
});
