// What a destination's answer does to the delivery, through the real consumer, lease objects, store
// and a real HTTP backend (test/setup/forward-backend.mjs).
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { limiterFor } from "../../src/forwarding/limiter";
import { MAX_RETRY_AFTER_SECONDS } from "../../src/processing/attempt";
import { defineHandlers } from "../../src/handler-api";
import { backendCalls, forwardingTo, planBackend, type BackendStep } from "../helpers/forward-backend";
import { consume, recordingQueue, storeDelivery } from "../helpers/processing";
import { deliveryRow } from "../helpers/store-db";

const NO_HANDLERS = defineHandlers({});

/** Stores a `standard` delivery, plans `path`'s answers, and runs the delivery once through the consumer. */
async function forwardOnce(path: string, steps: BackendStep[], extra: Record<string, string> = {}) {
  const ref = { source: "standard", id: `outcome${path.replaceAll("/", "-")}` };
  await storeDelivery(ref, { type: "invoice.paid" }, "invoice.paid");
  const url = await planBackend(path, ...steps);
  const run = await consume([ref], NO_HANDLERS, forwardingTo("standard", url, extra));
  return { ref, url, ...run, row: await deliveryRow(ref.source, ref.id) };
}

describe("a forwarded delivery", () => {
  it("is done when the backend answers 2xx", async () => {
    for (const status of [200, 202, 204]) {
      const { outcomes, result, row } = await forwardOnce(`/ok-${status}`, [{ status }]);
      expect(outcomes[0]).toEqual({ action: "ack", reason: "done" });
      expect(result.explicitAcks).toHaveLength(1);
      expect(row).toMatchObject({ status: "done", attempts: 1, handled: 1, error: null });
    }
  });

  it("is retried with the inbox's backoff on 408, 429, 500, 502, 503 and 504, the answer in its error", async () => {
    for (const status of [408, 429, 500, 502, 503, 504]) {
      const { outcomes, retryDelays, row } = await forwardOnce(`/retry-${status}`, [{ status, body: "upstream unhappy" }]);
      expect(outcomes[0], String(status)).toEqual({ action: "retry", reason: "handler_error", delaySeconds: 2 });
      expect(retryDelays).toEqual([2]);
      expect(row).toMatchObject({ status: "received", attempts: 1 });
      expect(row!.error).toMatch(new RegExp(`^RetryAfterError: the forward destination answered ${status} [A-Za-z ]+: upstream unhappy$`));
    }
  });

  it("waits as long as Retry-After asks when that is longer than the backoff, in seconds or as a date", async () => {
    const seconds = await forwardOnce("/retry-after-seconds", [{ status: 429, headers: { "retry-after": "30" } }]);
    expect(seconds.retryDelays).toEqual([30]);
    const date = await forwardOnce("/retry-after-date", [{ status: 503, headers: { "retry-after": new Date(Date.now() + 61_000).toUTCString() } }]);
    expect(date.retryDelays[0]).toBeGreaterThanOrEqual(60);
    expect(date.retryDelays[0]).toBeLessThanOrEqual(62);
  });

  it("keeps the backoff when Retry-After asks for less, and caps a longer one", async () => {
    expect((await forwardOnce("/retry-after-short", [{ status: 503, headers: { "retry-after": "1" } }])).retryDelays).toEqual([2]);
    expect((await forwardOnce("/retry-after-long", [{ status: 503, headers: { "retry-after": "86400" } }])).retryDelays).toEqual([MAX_RETRY_AFTER_SECONDS]);
  });

  it("fails at once on any other 4xx, with the status and the first bytes of the answer, and is dead-lettered", async () => {
    for (const status of [400, 404, 409, 422]) {
      const deadLetters = recordingQueue(env.DEAD_LETTERS);
      const ref = { source: "standard", id: `rejected-${status}` };
      await storeDelivery(ref, { type: "invoice.paid" }, "invoice.paid");
      const url = await planBackend(`/rejected-${status}`, { status, body: `{"error":"no such invoice","pad":"${"x".repeat(400)}"}` });
      const { outcomes, result } = await consume([ref], NO_HANDLERS, { ...forwardingTo("standard", url), DEAD_LETTERS: deadLetters.producer });
      expect(outcomes[0]).toEqual({ action: "ack", reason: "failed" });
      expect(result.retryMessages).toEqual([]);
      const row = await deliveryRow(ref.source, ref.id);
      expect(row).toMatchObject({ status: "failed", attempts: 1 });
      expect(row!.error).toMatch(new RegExp(`^PermanentError: the forward destination answered ${status} [A-Za-z ]+: \\{"error":"no such invoice","pad":"x+…$`));
      expect(row!.error!.length).toBeLessThan(320);
      expect(deadLetters.sent).toEqual([{ ...ref, error: row!.error }]);
    }
  });

  it("fails on a redirect, which is never followed", async () => {
    const target = await planBackend("/redirect-target", { status: 200 });
    const { outcomes, row } = await forwardOnce("/redirect", [{ status: 302, headers: { location: target } }]);
    expect(outcomes[0]!.reason).toBe("failed");
    expect(row!.error).toContain("302 Found");
    expect(row!.error).toContain("redirects are not followed");
    expect((await backendCalls("/redirect")).calls).toHaveLength(1);
    expect((await backendCalls("/redirect-target")).calls).toEqual([]);
  });

  it("is retried when the backend does not answer within the timeout, and the slot stays taken until it expires", async () => {
    const { outcomes, url, row } = await forwardOnce("/slow", [{ status: 200, delayMs: 3_000 }], { STANDARD_FORWARD_TIMEOUT_SECONDS: "1" });
    expect(outcomes[0]).toMatchObject({ action: "retry", reason: "handler_error" });
    expect(row).toMatchObject({ status: "received", attempts: 1, error: "RetryAfterError: the forward destination did not answer within 1 s" });
    // Still running at the destination, as far as anyone knows: it counts against the limit.
    expect(await limiterFor(env, url).inFlight()).toBe(1);
  });

  it("is retried when the backend cannot be reached", async () => {
    const ref = { source: "standard", id: "unreachable" };
    await storeDelivery(ref, { type: "invoice.paid" }, "invoice.paid");
    const { outcomes } = await consume([ref], NO_HANDLERS, forwardingTo("standard", "http://127.0.0.1:1/hooks"));
    expect(outcomes[0]).toMatchObject({ action: "retry", reason: "handler_error" });
    expect((await deliveryRow(ref.source, ref.id))!.error).toMatch(/^RetryAfterError: the forward destination could not be reached: /);
    // A connection lost midway looks the same: the request may be running there, so its slot stays taken.
    expect(await limiterFor(env, "http://127.0.0.1:1/hooks").inFlight()).toBe(1);
  });

  it("fails after MAX_ATTEMPTS answers of 503", async () => {
    const ref = { source: "standard", id: "always-503" };
    await storeDelivery(ref, { type: "invoice.paid" }, "invoice.paid");
    const url = await planBackend("/always-503", { status: 503, body: "down" });
    const reasons = [];
    for (let attempt = 1; attempt <= 3; attempt++) reasons.push((await consume([ref], NO_HANDLERS, forwardingTo("standard", url, { MAX_ATTEMPTS: "3" }))).outcomes[0]!.reason);
    expect(reasons).toEqual(["handler_error", "handler_error", "failed"]);
    expect(await deliveryRow(ref.source, ref.id)).toMatchObject({ status: "failed", attempts: 3, error: expect.stringMatching(/503 Service Unavailable: down \(gave up after 3 attempts\)$/) });
    expect((await backendCalls("/always-503")).calls).toHaveLength(3);
  });
});
