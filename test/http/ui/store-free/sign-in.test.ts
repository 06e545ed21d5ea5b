/**
 * Signing in to the dashboard: the cookie it sets, what it accepts, how long it lasts, the
 * throttle on guesses, where `next` may lead, and that it opens nothing but `/ui`.
 */
import { env, exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { safeNextPath } from "../../../../src/http/ui/next-path";
import { SESSION_SECONDS } from "../../../../src/http/ui/session";
import { FREE_ATTEMPTS } from "../../../../src/http/ui/sign-in-throttle";
import { BASE_URL } from "../../../helpers/signers";
import { clientAddress, SESSION_COOKIE, sessionFor, setCookie, ui } from "../client";

function signIn(token: string, next?: string, headers: Record<string, string> = clientAddress()) {
  return ui("/ui/login", { form: { token, ...(next === undefined ? {} : { next }) }, session: null, headers });
}

describe("GET /ui/login", () => {
  it("shows a labelled token field and a sign-in button, and is not cached", async () => {
    const page = await ui("/ui/login", { session: null });
    expect(page.status).toBe(200);
    expect(page.headers.get("content-type")).toMatch(/^text\/html/);
    expect(page.headers.get("cache-control")).toBe("no-store");
    expect(page.text).toMatch(/^<!DOCTYPE html>/);
    expect(page.text).toContain('<label for="token">Admin token</label>');
    expect(page.text).toMatch(/<input id="token" name="token" type="password"/);
  });

  it("carries a safe next path into the form, and drops an unsafe one", async () => {
    expect((await ui("/ui/login?next=%2Fui%2Fdeliveries%3Fstatus%3Dfailed", { session: null })).text).toContain(
      'name="next" value="/ui/deliveries?status=failed"',
    );
    expect((await ui("/ui/login?next=%2F%2Fevil.example%2Fui", { session: null })).text).toContain('name="next" value="/ui"');
  });

  it("sends a browser already signed in straight on", async () => {
    const page = await ui("/ui/login?next=/ui/deliveries");
    expect(page.status).toBe(303);
    expect(page.headers.get("location")).toBe("/ui/deliveries");
  });
});

describe("POST /ui/login", () => {
  it("with the admin token sets an HttpOnly, SameSite=Lax, Secure session cookie for /ui only, and redirects to next", async () => {
    const result = await signIn(env.ADMIN_TOKEN, "/ui/deliveries?status=failed");
    expect(result.status).toBe(303);
    expect(result.headers.get("location")).toBe("/ui/deliveries?status=failed");
    const cookie = setCookie(result.headers, SESSION_COOKIE);
    expect(cookie?.value).toMatch(/^v1\.\d+\.[A-Za-z0-9_-]+$/);
    expect(cookie?.attributes).toEqual(expect.arrayContaining(["HttpOnly", "SameSite=Lax", "Secure", "Path=/ui", `Max-Age=${SESSION_SECONDS}`]));
    // The cookie opens the dashboard.
    const overview = await ui("/ui", { session: cookie!.value });
    expect(overview.status).toBe(200);
  });

  it("over plain http (wrangler dev) sets the cookie without Secure and without the __Secure- prefix", async () => {
    const response = await exports.default.fetch(
      new Request("http://127.0.0.1:8787/ui/login", {
        method: "POST",
        headers: { origin: "http://127.0.0.1:8787", "content-type": "application/x-www-form-urlencoded", ...clientAddress() },
        body: new URLSearchParams({ token: env.ADMIN_TOKEN }).toString(),
        redirect: "manual",
      }),
    );
    expect(response.status).toBe(303);
    const cookie = setCookie(response.headers, "inbox_session");
    expect(cookie?.attributes).toEqual(expect.arrayContaining(["HttpOnly", "SameSite=Lax", "Path=/ui"]));
    expect(cookie?.attributes).not.toContain("Secure");
  });

  it.each([
    ["a wrong token", "test-admin-token-but-wrong"],
    ["a prefix of the token", "test-admin"],
    ["an empty token", ""],
  ])("with %s answers 401, sets no cookie, and says so", async (_case, token) => {
    const result = await signIn(token);
    expect(result.status).toBe(401);
    expect(result.headers.getSetCookie()).toEqual([]);
    expect(result.text).toContain("That is not the admin token.");
  });

  it.each([
    ["another origin", "https://evil.example/ui"],
    ["a scheme-relative URL", "//evil.example/ui"],
    ["a backslash", "/ui\\..\\admin"],
    ["a /\\ host", "/\\evil.example"],
    ["a dot segment", "/ui/../admin/stats"],
    ["an encoded dot segment", "/ui/%2e%2e/admin/stats"],
    ["a path outside /ui", "/admin/stats"],
    ["a path that only starts like /ui", "/uix/deliveries"],
    ["a javascript: URL", "javascript:alert(1)"],
    ["a tab inside", "/ui/\t/evil"],
  ])("after sign-in never redirects to %s, only to /ui", async (_case, next) => {
    const result = await signIn(env.ADMIN_TOKEN, next);
    expect(result.status).toBe(303);
    expect(result.headers.get("location")).toBe("/ui");
  });

  it("refuses a sign-in form posted from another site (CSRF), before looking at the token", async () => {
    const result = await ui("/ui/login", { form: { token: env.ADMIN_TOKEN }, session: null, headers: { origin: "https://evil.example", ...clientAddress() } });
    expect(result.status).toBe(403);
    expect(result.headers.getSetCookie()).toEqual([]);
  });
});

describe("safeNextPath", () => {
  it.each([
    ["/ui", "/ui"],
    ["/ui/deliveries", "/ui/deliveries"],
    ["/ui/deliveries?status=failed&source=stripe", "/ui/deliveries?status=failed&source=stripe"],
    ["/ui/deliveries/stripe/evt%2F1", "/ui/deliveries/stripe/evt%2F1"],
    ["/ui?x=1#top", "/ui?x=1"],
  ])("keeps %s", (next, expected) => {
    expect(safeNextPath(next)).toBe(expected);
  });

  it.each([undefined, null, "", "ui", "/", "/ui/./x", "/ui/x/..", "/UI", "https://inbox.example.com/ui", "/ui\u0000"])("falls back to /ui for %j", (next) => {
    expect(safeNextPath(next)).toBe("/ui");
  });

  it("falls back to /ui for a path of more than 2 KiB", () => {
    expect(safeNextPath(`/ui/${"x".repeat(3_000)}`)).toBe("/ui");
  });
});

describe("the session", () => {
  it("is refused once expired: a GET goes to the sign-in page, with next", async () => {
    const old = await sessionFor(env.ADMIN_TOKEN, Date.now() - (SESSION_SECONDS + 1) * 1000);
    const result = await ui("/ui/deliveries?status=failed", { session: old });
    expect(result.status).toBe(303);
    expect(result.headers.get("location")).toBe(`/ui/login?next=${encodeURIComponent("/ui/deliveries?status=failed")}`);
  });

  it("ends when the admin token changes: a cookie of the old token opens nothing", async () => {
    const before = await sessionFor("the-token-before-rotation");
    expect((await ui("/ui", { session: before, env: { ADMIN_TOKEN: "the-token-before-rotation" } })).status).toBe(200);
    expect((await ui("/ui", { session: before, env: { ADMIN_TOKEN: "the-token-after-rotation" } })).status).toBe(303);
  });

  it.each([
    ["a changed expiry", (value: string) => value.replace(/^v1\.(\d+)/, (_, expiry) => `v1.${Number(expiry) + 60}`)],
    ["a changed signature", (value: string) => value.slice(0, -2) + (value.endsWith("AA") ? "BB" : "AA")],
    ["no signature", (value: string) => value.split(".").slice(0, 2).join(".")],
    ["the admin token itself", () => "test-admin-token"],
  ])("is refused with %s", async (_case, tamper) => {
    const result = await ui("/ui", { session: tamper(await sessionFor()) });
    expect(result.status).toBe(303);
    expect(result.headers.get("location")).toBe("/ui/login?next=%2Fui");
  });

  it("refuses a POST without a session with 401, changing nothing", async () => {
    const result = await ui("/ui/replay", { form: { left: "5" }, session: null });
    expect(result.status).toBe(401);
    expect(result.text).toContain("You are signed out");
  });

  it("is ended by sign-out: the cookie is cleared and the browser sent to sign in", async () => {
    const result = await ui("/ui/logout", { form: {} });
    expect(result.status).toBe(303);
    expect(result.headers.get("location")).toBe("/ui/login");
    const cookie = setCookie(result.headers, SESSION_COOKIE);
    expect(cookie?.value).toBe("");
    expect(cookie?.attributes).toEqual(expect.arrayContaining(["Max-Age=0", "Path=/ui"]));
  });
});

describe("the sign-in throttle", () => {
  it(`lets ${FREE_ATTEMPTS} wrong tokens through, then refuses with 429 and Retry-After, the right token too`, async () => {
    const address = clientAddress();
    for (let attempt = 1; attempt <= FREE_ATTEMPTS + 1; attempt++) expect((await signIn("wrong", undefined, address)).status).toBe(401);
    const locked = await signIn(env.ADMIN_TOKEN, undefined, address);
    expect(locked.status).toBe(429);
    expect(Number(locked.headers.get("retry-after"))).toBeGreaterThan(0);
    expect(locked.headers.getSetCookie()).toEqual([]);
    expect(locked.text).toContain("Too many sign-in attempts");
  });

  it("counts each address alone: another address signs in meanwhile", async () => {
    const address = clientAddress();
    for (let attempt = 1; attempt <= FREE_ATTEMPTS + 1; attempt++) await signIn("wrong", undefined, address);
    expect((await signIn(env.ADMIN_TOKEN, undefined, address)).status).toBe(429);
    expect((await signIn(env.ADMIN_TOKEN)).status).toBe(303);
  });

  it("forgets the wrong tokens of an address once it signs in", async () => {
    const address = clientAddress();
    for (let attempt = 1; attempt < FREE_ATTEMPTS; attempt++) await signIn("wrong", undefined, address);
    expect((await signIn(env.ADMIN_TOKEN, undefined, address)).status).toBe(303);
    for (let attempt = 1; attempt < FREE_ATTEMPTS; attempt++) expect((await signIn("wrong", undefined, address)).status).toBe(401);
    expect((await signIn(env.ADMIN_TOKEN, undefined, address)).status).toBe(303);
  });
});

describe("without ADMIN_TOKEN", () => {
  it.each([
    ["GET", "/ui"],
    ["GET", "/ui/login"],
    ["GET", "/ui/deliveries"],
    ["POST", "/ui/login"],
  ])("%s %s answers a 503 page saying the dashboard is closed", async (method, path) => {
    for (const token of [undefined, ""]) {
      const result = await ui(path, { method, form: method === "POST" ? { token: "" } : undefined, env: { ADMIN_TOKEN: token }, headers: clientAddress() });
      expect(result.status).toBe(503);
      expect(result.headers.get("content-type")).toMatch(/^text\/html/);
      expect(result.text).toContain("The dashboard is closed");
      expect(result.headers.get("cache-control")).toBe("no-store");
    }
  });
});

describe("the admin API and the session cookie", () => {
  it("refuses /admin with the dashboard's cookie and no bearer token: 401", async () => {
    const cookie = `${SESSION_COOKIE}=${await sessionFor()}; inbox_session=${await sessionFor()}`;
    for (const path of ["/admin/stats", "/admin/deliveries"]) {
      const response = await exports.default.fetch(new Request(`${BASE_URL}${path}`, { headers: { cookie } }));
      expect(response.status).toBe(401);
      expect(await response.json()).toMatchObject({ error: "unauthorized" });
    }
    const replay = await exports.default.fetch(
      new Request(`${BASE_URL}/admin/replay`, { method: "POST", headers: { cookie, origin: BASE_URL, "content-type": "application/json" }, body: '{"status":"failed"}' }),
    );
    expect(replay.status).toBe(401);
  });
});
