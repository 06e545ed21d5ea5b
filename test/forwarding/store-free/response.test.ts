import { describe, expect, it } from "vitest";
import { ERROR_BODY_CHARS, judgeResponse, parseRetryAfter, readStart, STATUS_TEXT_CHARS } from "../../../src/forwarding/response";

const NOW = Date.UTC(2026, 11, 4, 12, 0, 0);
const URL_SENT = "https://backend.example.com/hooks?token=t0p";

function answer(status: number, body = "", headers: Record<string, string> = {}) {
  return new Response(status === 204 || status === 304 ? null : body, { status, headers });
}

describe("parseRetryAfter", () => {
  it("reads delta-seconds and HTTP dates, from now", () => {
    expect(parseRetryAfter("120", NOW)).toBe(120);
    expect(parseRetryAfter(" 0 ", NOW)).toBe(0);
    expect(parseRetryAfter(new Date(NOW + 30_000).toUTCString(), NOW)).toBe(30);
    expect(parseRetryAfter("Fri, 04 Dec 2026 12:00:45 GMT", NOW)).toBe(45);
  });

  it("reads a date in the past as 0, and anything unreadable as no hint", () => {
    expect(parseRetryAfter(new Date(NOW - 60_000).toUTCString(), NOW)).toBe(0);
    for (const value of [null, "", "soon", "-5", "1.5", "Fri, 04 Dec 2026"]) expect(parseRetryAfter(value, NOW), String(value)).toBeNull();
  });
});

describe("judgeResponse", () => {
  it("takes every 2xx as delivered", async () => {
    for (const status of [200, 201, 202, 204, 299]) {
      expect(await judgeResponse(answer(status, "ok"), URL_SENT, NOW)).toEqual({ kind: "delivered", status });
    }
  });

  it("retries 408, 429 and 5xx, with the status and the start of the body, and the Retry-After hint", async () => {
    for (const status of [408, 429, 500, 502, 503, 504]) {
      const result = await judgeResponse(answer(status, "busy, try later", { "retry-after": "7" }), URL_SENT, NOW);
      expect(result).toEqual({ kind: "retry", reason: `the forward destination answered ${status}: busy, try later`, retryAfterSeconds: 7 });
    }
    expect(await judgeResponse(answer(503), URL_SENT, NOW)).toEqual({ kind: "retry", reason: "the forward destination answered 503", retryAfterSeconds: null });
  });

  it("refuses any other 4xx at once, with the status and the first bytes of the body", async () => {
    for (const status of [400, 401, 403, 404, 409, 410, 413, 422]) {
      const result = await judgeResponse(answer(status, '{"error":"unknown customer"}'), URL_SENT, NOW);
      expect(result).toEqual({ kind: "rejected", reason: `the forward destination answered ${status}: {"error":"unknown customer"}` });
    }
  });

  it("refuses a redirect, saying where it pointed without its query, and never follows it", async () => {
    const result = await judgeResponse(answer(302, "", { location: "https://elsewhere.example.com/new?token=secret" }), URL_SENT, NOW);
    expect(result.kind).toBe("rejected");
    if (result.kind !== "rejected") return;
    expect(result.reason).toContain("302");
    expect(result.reason).toContain("redirects are not followed");
    expect(result.reason).toContain("https://elsewhere.example.com/new");
    expect(result.reason).not.toContain("secret");
    for (const status of [301, 303, 307, 308]) expect((await judgeResponse(answer(status, "", { location: "/moved" }), URL_SENT, NOW)).kind).toBe("rejected");
  });

  it("clips the backend's reason phrase and cleans it like the body: one line, no format characters", async () => {
    const response = answer(400, "bad");
    // As a backend may send it (a Response built here refuses control characters in statusText).
    Object.defineProperty(response, "statusText", { value: `Bad\r\n\tRequest \u202Egnp.exe\u200B ${"x".repeat(200)}` });
    const result = await judgeResponse(response, URL_SENT, NOW);
    expect(result.kind).toBe("rejected");
    const reason = (result as { reason: string }).reason;
    expect(reason).toBe(`the forward destination answered 400 Bad Request gnp.exe ${"x".repeat(STATUS_TEXT_CHARS - "Bad Request gnp.exe ".length)}…: bad`);
    const blank = answer(503);
    Object.defineProperty(blank, "statusText", { value: "\u202E \u200B" });
    expect(await judgeResponse(blank, URL_SENT, NOW)).toEqual({ kind: "retry", reason: "the forward destination answered 503", retryAfterSeconds: null });
  });
});

describe("readStart", () => {
  it("removes format characters such as bidi overrides from the body's start", async () => {
    expect(await readStart(new Response("unknown \u202Eexe.customer\u202C\u2066 id\uFEFF"))).toBe("unknown exe.customer id");
  });

  it("keeps one line of at most ERROR_BODY_CHARS characters, and never reads the whole of a large body", async () => {
    let pulled = 0;
    const endless = new ReadableStream<Uint8Array>({
      pull(controller) {
        pulled++;
        controller.enqueue(new TextEncoder().encode("line one\nline\ttwo ".repeat(50)));
      },
    });
    const text = await readStart(new Response(endless));
    expect(text.startsWith("line one line two line one")).toBe(true);
    expect(text.length).toBe(ERROR_BODY_CHARS + 1);
    expect(text.endsWith("…")).toBe(true);
    expect(pulled).toBeLessThan(5);
  });
});
