import { describe, expect, it } from "vitest";
import { checkForwardSecret, checkForwardUrl, timeoutProblem } from "../../src/config/destination";

describe("checkForwardUrl", () => {
  it("accepts https:// anywhere, and http:// for this machine only", () => {
    for (const url of ["https://billing.example.com/webhooks", "http://localhost:3000/hooks", "http://127.0.0.1:8080/", "http://[::1]/in", "http://api.localhost/x", "http://127.8.9.10/"]) {
      expect(checkForwardUrl(url)).toEqual({ ok: true, url: new URL(url).toString() });
    }
  });

  it("names every host it accepts over http:// in its problem, as docs/forwarding.md does", () => {
    expect(checkForwardUrl("http://billing.example.com/")).toEqual({ ok: false, problem: "must be an absolute https:// URL (http:// only for localhost, *.localhost, 127.0.0.0/8 or [::1])" });
  });

  it("refuses plain http to another host, other schemes and what is not a URL", () => {
    for (const url of ["http://billing.example.com/webhooks", "http://10.0.0.7/", "ftp://example.com/", "billing.example.com/webhooks", "", "https://"]) {
      expect(checkForwardUrl(url)).toEqual({ ok: false, problem: expect.stringContaining("https://") });
    }
  });

  it("refuses a URL with a user name or password in it", () => {
    expect(checkForwardUrl("https://user:pass@billing.example.com/")).toEqual({ ok: false, problem: expect.stringContaining("user name or password") });
  });
});

describe("checkForwardSecret", () => {
  it("decodes a whsec_ secret of 24 to 64 bytes", () => {
    const result = checkForwardSecret("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw");
    expect(result.ok && result.key.length).toBe(24);
    expect(checkForwardSecret(`whsec_${btoa("x".repeat(64))}`).ok).toBe(true);
  });

  it("refuses a secret without the prefix, not base64, too short or too long, and names no value", () => {
    for (const secret of ["MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "whsec_not*base64", `whsec_${btoa("short")}`, `whsec_${btoa("x".repeat(65))}`, "whsec_"]) {
      const result = checkForwardSecret(secret);
      expect(result.ok).toBe(false);
      if (!result.ok && secret.length > "whsec_".length) expect(result.problem).not.toContain(secret);
    }
  });
});

describe("timeoutProblem", () => {
  it("wants the timeout at most half of LEASE_SECONDS and under HANDLER_TIMEOUT_SECONDS", () => {
    expect(timeoutProblem(30, { leaseSeconds: 60, handlerTimeoutSeconds: 300 })).toBeNull();
    expect(timeoutProblem(31, { leaseSeconds: 60, handlerTimeoutSeconds: 300 })).toMatch(/half of LEASE_SECONDS/);
    expect(timeoutProblem(30, { leaseSeconds: 600, handlerTimeoutSeconds: 30 })).toMatch(/HANDLER_TIMEOUT_SECONDS/);
  });
});
