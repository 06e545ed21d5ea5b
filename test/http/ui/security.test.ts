/**
 * What every dashboard response carries (no-store, CSP with a nonce, no framing), what every POST
 * must be (a form of this origin), and how errors are shown (a page, nothing internal).
 */
import { describe, expect, it, vi } from "vitest";
import { MAX_FORM_BYTES } from "../../../src/http/ui/security";
import { sql } from "../../../src/sql";
import { storeDelivery } from "../../helpers/processing";
import { exec, firstRow, storeName } from "../../helpers/store-db";
import { faultyStore, pgError } from "../../helpers/store-faults";
import { ui } from "./client";

const ref = { source: "ui-security", id: "sec-1" };

/** Every GET page of the dashboard (the sign-in page as a signed-out browser sees it). */
const PAGES: [string, { session?: null }][] = [
  ["/ui", {}],
  ["/ui/login", { session: null }],
  ["/ui/deliveries", {}],
  [`/ui/deliveries/${ref.source}/${ref.id}`, {}],
  ["/ui/replay", {}],
  ["/ui/nowhere", {}],
];
/** Every POST route, with a form each would accept. */
const POSTS: [string, Record<string, string>][] = [
  ["/ui/login", { token: "test-admin-token" }],
  ["/ui/logout", {}],
  [`/ui/deliveries/${ref.source}/${ref.id}/replay`, {}],
  ["/ui/replay", { left: "1" }],
];

describe("every dashboard response", () => {
  it.each(PAGES)("GET %s is HTML with no-store, a nonce CSP, and no framing", async (path, call) => {
    await storeDelivery(ref, { n: 1 });
    const page = await ui(path, call);
    expect(page.headers.get("content-type")).toMatch(/^text\/html/);
    expect(page.headers.get("cache-control")).toBe("no-store");
    expect(page.headers.get("x-frame-options")).toBe("DENY");
    expect(page.headers.get("x-content-type-options")).toBe("nosniff");
    expect(page.headers.get("referrer-policy")).toBe("same-origin");
    const csp = page.headers.get("content-security-policy")!;
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).toContain("form-action 'self'");
    expect(csp).not.toContain("unsafe-inline");
    const nonce = /script-src 'nonce-([A-Za-z0-9+/=]+)'/.exec(csp)?.[1];
    expect(nonce).toBeDefined();
    // The one script tag carries this response's nonce; no inline script, no inline style.
    expect([...page.text.matchAll(/<script\b[^>]*>/g)].map((match) => match[0])).toEqual([`<script src="/ui/assets/app.js" nonce="${nonce}" defer="">`]);
    expect(page.text).not.toMatch(/\sstyle=/);
    expect(page.text).not.toMatch(/\son[a-z]+=/);
  });

  it("gets a fresh nonce each time", async () => {
    const nonces = await Promise.all([ui("/ui/login"), ui("/ui/login")].map(async (reply) => (await reply).headers.get("content-security-policy")));
    expect(nonces[0]).not.toBe(nonces[1]);
  });

  it.each([
    ["/ui/assets/app.css", /^text\/css/],
    ["/ui/assets/app.js", /^text\/javascript/],
    ["/ui/assets/favicon.svg", /^image\/svg\+xml/],
  ])("serves %s without a session, with its type and no-store", async (path, type) => {
    const asset = await ui(path, { session: null });
    expect(asset.status).toBe(200);
    expect(asset.headers.get("content-type")).toMatch(type);
    expect(asset.headers.get("cache-control")).toBe("no-store");
    expect(asset.headers.get("x-content-type-options")).toBe("nosniff");
  });

  it("keeps the stylesheet and script small (a few KB, no framework)", async () => {
    const css = await ui("/ui/assets/app.css", { session: null });
    const js = await ui("/ui/assets/app.js", { session: null });
    expect(css.text.length + js.text.length).toBeLessThan(16_000);
  });

  it("answers an unknown /ui path with a 404 page", async () => {
    const page = await ui("/ui/nowhere");
    expect(page.status).toBe(404);
    expect(page.text).toContain("No such page");
  });
});

describe("CSRF: every POST", () => {
  it.each(POSTS)("POST %s from another origin is refused with 403 and changes nothing", async (path, form) => {
    await storeDelivery(ref, { n: 1 });
    await exec(sql`UPDATE deliveries SET status = 'failed', error = 'kept' WHERE source = ${ref.source} AND id = ${ref.id}`);
    for (const headers of [
      { origin: "https://evil.example" } as Record<string, string>,
      { origin: "https://evil.example", "sec-fetch-site": "cross-site" },
      { origin: "null" },
    ]) {
      const result = await ui(path, { form, headers });
      expect(result.status).toBe(403);
      expect(result.headers.get("content-type")).toMatch(/^text\/html/);
      expect(result.text).toContain("not sent from this dashboard");
      expect(result.headers.getSetCookie()).toEqual([]);
    }
    const row = await firstRow(sql`SELECT status, error FROM deliveries WHERE source = ${ref.source} AND id = ${ref.id}`);
    expect(row).toEqual({ status: "failed", error: "kept" });
  });

  it.each(POSTS)("POST %s with a form past MAX_FORM_BYTES is refused with 413 before anything reads it", async (path, form) => {
    const result = await ui(path, { form: { ...form, padding: "x".repeat(MAX_FORM_BYTES) } });
    expect(result.status).toBe(413);
    expect(result.text).toContain("Too large");
  });

  it.each(POSTS)("POST %s without Origin or Sec-Fetch-Site is refused with 403", async (path, form) => {
    const request = await ui(path, { form, headers: { origin: "" } });
    expect(request.status).toBe(403);
  });

  it("accepts a same-origin POST told by Sec-Fetch-Site alone (Origin: null under a no-referrer policy)", async () => {
    const result = await ui("/ui/logout", { form: {}, headers: { origin: "null", "sec-fetch-site": "same-origin" } });
    expect(result.status).toBe(303);
  });

  it.each(["application/json", "text/plain"])("refuses a POST with a %s body even from this origin (415)", async (type) => {
    const result = await ui("/ui/logout", { method: "POST", headers: { "content-type": type } });
    expect(result.status).toBe(415);
  });
});

describe("errors", () => {
  it("render an HTML page without internals when a store call throws", async () => {
    // Each database's own error, naming an internal table.
    const failing = faultyStore(() =>
      storeName === "d1" ? new Error("D1_ERROR: no such table: secret_internal_table SQLITE_ERROR") : pgError("42P01", 'relation "secret_internal_table" does not exist'),
    );
    const errors = vi.spyOn(console, "error").mockImplementation(() => {});
    try {
      const page = await ui("/ui/deliveries", { env: failing.bindings });
      expect(failing.faulted.length).toBeGreaterThan(0);
      expect(page.status).toBe(500);
      expect(page.headers.get("content-type")).toMatch(/^text\/html/);
      expect(page.headers.get("cache-control")).toBe("no-store");
      expect(page.text).toContain("Something went wrong");
      expect(page.text).not.toMatch(/secret_internal_table|D1_ERROR|SQLITE|42P01|at \w+ \(/);
    } finally {
      errors.mockRestore();
    }
  });

  it("render a 503 page naming no value when the configuration is invalid", async () => {
    const errors = vi.spyOn(console, "error").mockImplementation(() => {});
    try {
      const page = await ui("/ui", { env: { RETENTION_DAYS: "1" } });
      expect(page.status).toBe(503);
      expect(page.headers.get("content-type")).toMatch(/^text\/html/);
      expect(page.headers.get("cache-control")).toBe("no-store");
      expect(page.headers.get("content-security-policy")).toContain("frame-ancestors 'none'");
      expect(page.text).toContain("The inbox configuration is invalid");
    } finally {
      errors.mockRestore();
    }
  });
});
