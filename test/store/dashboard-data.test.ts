/**
 * What the dashboard reads of one delivery (migrations/0008): its request headers, never a
 * credential, and its attempt history, both written by statements that run anyway (D1's rows
 * written for them: write-cost.test.ts). The real store (D1 or Postgres), receiver and consumer.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { PermanentError } from "../../src/handler-api";
import { defineHandlers, type Handler } from "../../src/handler-api";
import { hmac } from "../../src/providers/hmac";
import { sql } from "../../src/sql";
import { CUT_SHORT, openStore } from "../../src/store";
import { MAX_ATTEMPT_LOG } from "../../src/store/attempts";
import { headersToStore, MAX_HEADERS_BYTES } from "../../src/store/headers";
import { consume, storeDelivery } from "../helpers/processing";
import { post, sha256Hex, stripeSignature, unique } from "../helpers/provider-signers";
import { exec, recordDelivery } from "../helpers/store-db";

const store = () => openStore(env);

const NOW = Date.parse("2026-12-04T00:00:00.000Z");
const body = new TextEncoder().encode('{"type":"payment.succeeded"}');

describe("headersToStore", () => {
  it("keeps every header but the credentials, the provider's own included, whatever their case", () => {
    const headers = new Headers([
      ["Stripe-Signature", "t=1,v1=abc"],
      ["Authorization", "Bearer secret-1"],
      ["Cookie", "session=secret-2"],
      ["X-Gitlab-Token", "secret-3"],
      ["X-Api-Key", "secret-4"],
      ["Content-Type", "application/json"],
    ]);
    const stored = headersToStore(headers, ["X-GitLab-Token"]);
    expect(JSON.parse(stored)).toEqual([
      ["content-type", "application/json"],
      ["stripe-signature", "t=1,v1=abc"],
    ]);
    expect(stored).not.toMatch(/secret-/);
  });

  it("leaves out any header whose name says it carries a credential, and what a custom source declares", () => {
    const headers = new Headers([
      ["X-Acme-Token", "secret-1"],
      ["X-Session-Id", "secret-2"],
      ["X-Client-Secret", "secret-3"],
      ["X-Acme-Key", "secret-4"],
      ["X-Acme-Signature", "sha256=ab"],
      ["X-Hub-Signature-256", "sha256=cd"],
      ["Svix-Signature", "v1,ef"],
    ]);
    const acme = hmac({ header: "X-Acme-Signature", deliveryId: { header: "X-Acme-Id" }, credentialHeaders: ["X-Acme-Key"] });
    const stored = headersToStore(headers, acme.credentialHeaders ?? []);
    expect(JSON.parse(stored)).toEqual([
      ["svix-signature", "v1,ef"],
      ["x-acme-signature", "sha256=ab"],
      ["x-hub-signature-256", "sha256=cd"],
    ]);
  });

  it("stops at MAX_HEADERS_BYTES of UTF-8 and says how many it left out", () => {
    // Latin-1 characters: two bytes each in UTF-8.
    const headers = new Headers(Array.from({ length: 40 }, (_, index) => [`x-big-${String(index).padStart(2, "0")}`, "é".repeat(500)] as [string, string]));
    const stored = JSON.parse(headersToStore(headers, [])) as [string, string][];
    expect(new TextEncoder().encode(JSON.stringify(stored)).byteLength).toBeLessThanOrEqual(MAX_HEADERS_BYTES + 100);
    const kept = stored.length - 1;
    expect(kept).toBeGreaterThan(5);
    expect(stored.at(-1)).toEqual(["(truncated)", `${40 - kept} more headers not stored`]);
  });
});

describe("the receiver stores the request headers", () => {
  it("with the signature and without GitLab's token, which is the secret itself", async () => {
    const gitlabBody = JSON.stringify({ object_kind: "push", checkout_sha: unique("") });
    const id = unique("gl");
    const reply = await post("gitlab", gitlabBody, { "x-gitlab-token": env.GITLAB_WEBHOOK_SECRET, "idempotency-key": id, "x-gitlab-event": "Push Hook", authorization: "Basic c2VjcmV0" });
    expect(reply.json.status).toBe("stored");
    const detail = await store().get({ source: "gitlab", id });
    const names = detail!.headers!.map(([name]) => name);
    expect(names).toEqual(expect.arrayContaining(["idempotency-key", "x-gitlab-event"]));
    expect(names).not.toContain("x-gitlab-token");
    expect(names).not.toContain("authorization");
    expect(JSON.stringify(detail!.headers)).not.toContain(env.GITLAB_WEBHOOK_SECRET);

    const stripeId = unique("evt");
    const stripeBody = JSON.stringify({ id: stripeId, type: "charge.succeeded" });
    const signature = await stripeSignature(stripeBody);
    expect((await post("stripe", stripeBody, { "stripe-signature": signature, "content-type": "application/json" })).json.status).toBe("stored");
    expect((await store().get({ source: "stripe", id: stripeId }))!.headers).toEqual(
      expect.arrayContaining([
        ["stripe-signature", signature],
        ["content-type", "application/json"],
      ]),
    );
  });

  it("are cleared by retention with the body", async () => {
    const ref = { source: "dash-retention", id: "old-done" };
    await recordDelivery({ ...ref, eventType: null, body, receivedAtMs: NOW - 40 * 86_400_000, headers: '[["x-a","b"]]' });
    expect(await store().commitDone(ref, NOW, { handled: true, effects: [] }, NOW)).toEqual({ kind: "committed" });
    expect((await store().get(ref))!.headers).toEqual([["x-a", "b"]]);
    await store().applyRetention(NOW - 365 * 86_400_000, NOW - 7 * 86_400_000, 1_000);
    const detail = await store().get(ref);
    expect(detail).toMatchObject({ body: null, headers: null });
  });
});

describe("the attempt history", () => {
  it("records each run with its number, start, duration, outcome and error, and a replay", async () => {
    const ref = { source: "dash", id: unique("history") };
    await storeDelivery(ref);
    let calls = 0;
    const flaky: Handler = () => {
      if (++calls === 1) throw new Error("upstream said 503");
    };
    const handlers = defineHandlers({ dash: { "*": flaky } });
    expect((await consume([ref], handlers)).outcomes.map((outcome) => outcome.reason)).toEqual(["handler_error"]);
    expect((await consume([ref], handlers)).outcomes.map((outcome) => outcome.reason)).toEqual(["done"]);
    let log = (await store().get(ref))!.attemptLog;
    expect(log).toMatchObject([
      { attempt: 1, outcome: "retry", error: expect.stringContaining("upstream said 503") },
      { attempt: 2, outcome: "done", error: null },
    ]);
    for (const entry of log) {
      expect(Date.parse(entry.at!)).toBeGreaterThan(NOW);
      expect(entry.ms).toBeGreaterThanOrEqual(0);
    }

    expect(await store().resetForReplay(ref, ["done"], Date.now())).not.toBeNull();
    log = (await store().get(ref))!.attemptLog;
    expect(log.map((entry) => [entry.attempt, entry.outcome])).toEqual([
      [1, "retry"],
      [2, "done"],
      [null, "replayed"],
    ]);
  });

  it("records a permanent failure and an unhandled delivery", async () => {
    const failing = { source: "dash", id: unique("fails") };
    const unhandled = { source: "dash-nobody", id: unique("unhandled") };
    await storeDelivery(failing);
    await storeDelivery(unhandled);
    const handlers = defineHandlers({
      dash: {
        "*": () => {
          throw new PermanentError("card_declined is final");
        },
      },
    });
    await consume([failing, unhandled], handlers);
    expect((await store().get(failing))!.attemptLog).toMatchObject([{ attempt: 1, outcome: "failed", error: "PermanentError: card_declined is final" }]);
    expect((await store().get(unhandled))!.attemptLog).toMatchObject([{ attempt: 1, outcome: "unhandled" }]);
  });

  it("records a vanished run when a takeover finds it, once, even when the takeover's claim runs twice", async () => {
    const ref = { source: "dash", id: unique("vanished") };
    await recordDelivery({ ...ref, eventType: null, body, receivedAtMs: NOW });
    expect(await store().claim(ref, 10, { previousToken: 0, maxAttempts: 5 }, NOW)).toMatchObject({ kind: "run", attempt: 1 });
    expect(await store().claim(ref, 20, { previousToken: 10, maxAttempts: 5 }, NOW + 1)).toMatchObject({ kind: "run", attempt: 2 });
    expect(await store().claim(ref, 20, { previousToken: 10, maxAttempts: 5 }, NOW + 1)).toMatchObject({ kind: "run", attempt: 2 });
    expect(await store().commitDone(ref, 20, { handled: true, effects: [], run: { startedAtMs: NOW + 1 } }, NOW + 500)).toEqual({ kind: "committed" });
    expect((await store().get(ref))!.attemptLog).toEqual([
      { attempt: 1, at: null, ms: null, outcome: "vanished", error: "the worker's lease ran out without a result" },
      { attempt: 2, at: "2026-12-04T00:00:00.001Z", ms: 499, outcome: "done", error: null },
    ]);
  });

  it("keeps deferrals in a row with the same reason as one entry, its time the latest and a count", async () => {
    const ref = { source: "dash", id: unique("deferrals") };
    await recordDelivery({ ...ref, eventType: null, body, receivedAtMs: NOW });
    const busy = "the forward destination has 2 requests in flight already";
    expect(await store().recordResult(ref, 1, { kind: "retry", error: "RetryAfterError: the forward destination answered 503" }, NOW + 10, { startedAtMs: NOW })).toBe(1);
    // Each answers how many deferrals in a row with its reason the history now shows.
    for (const token of [2, 3, 4]) expect(await store().recordResult(ref, token, { kind: "deferred", why: busy }, NOW + token * 1_000 + 7, { startedAtMs: NOW + token * 1_000 })).toBe(token - 1);
    expect(await store().recordResult(ref, 5, { kind: "deferred", why: CUT_SHORT }, NOW + 5_000)).toBe(1);
    expect(await store().recordResult(ref, 6, { kind: "deferred", why: busy }, NOW + 6_003, { startedAtMs: NOW + 6_000 })).toBe(1);
    // A stale token is refused by the fence: 0.
    expect(await store().recordResult(ref, 5, { kind: "deferred", why: busy }, NOW + 7_000)).toBe(0);
    expect((await store().get(ref))!.attemptLog).toEqual([
      { attempt: 1, at: "2026-12-04T00:00:00.000Z", ms: 10, outcome: "retry", error: "RetryAfterError: the forward destination answered 503" },
      { attempt: null, at: "2026-12-04T00:00:04.000Z", ms: 7, outcome: "deferred", error: `${busy} (not counted)`, count: 3 },
      { attempt: null, at: null, ms: null, outcome: "deferred", error: "cut short: the consumer invocation's time ran out (not counted)" },
      { attempt: null, at: "2026-12-04T00:00:06.000Z", ms: 3, outcome: "deferred", error: `${busy} (not counted)` },
    ]);
  });

  it(`keeps the last ${MAX_ATTEMPT_LOG} entries`, async () => {
    const ref = { source: "dash", id: unique("long") };
    await recordDelivery({ ...ref, eventType: null, body, receivedAtMs: NOW });
    for (let round = 0; round < MAX_ATTEMPT_LOG + 5; round++) {
      // A done mark always sets handled; a done row without it is a filtered delivery (store/filtered.ts).
      await exec(sql`UPDATE deliveries SET status = 'done', handled = TRUE WHERE source = ${ref.source} AND id = ${ref.id}`);
      expect(await store().resetForReplay(ref, ["done"], NOW + round)).not.toBeNull();
    }
    const log = (await store().get(ref))!.attemptLog;
    expect(log).toHaveLength(MAX_ATTEMPT_LOG);
    expect(log[0]!.at).toBe(new Date(NOW + 5).toISOString());
  });
});

describe("finding deliveries", () => {
  it("filters the listing by event type and a received time range", async () => {
    const source = "dash-filter";
    const at = (minutes: number) => NOW + minutes * 60_000;
    for (const [id, type, minutes] of [
      ["a", "invoice.paid", 0],
      ["b", "invoice.paid", 10],
      ["c", "charge.failed", 20],
      ["d", "invoice.paid", 30],
    ] as const) {
      await recordDelivery({ source, id, eventType: type, body, receivedAtMs: at(minutes) });
    }
    const ids = async (filter: object) => (await store().list({ source, limit: 10, ...filter })).deliveries.map((delivery) => delivery.id);
    expect(await ids({ eventType: "invoice.paid" })).toEqual(["d", "b", "a"]);
    expect(await ids({ since: new Date(at(10)).toISOString(), until: new Date(at(30)).toISOString() })).toEqual(["c", "b"]);
    expect(await ids({ eventType: "invoice.paid", since: new Date(at(5)).toISOString() })).toEqual(["d", "b"]);
  });

  it("looks one id up across sources, newest first, and finds nothing for an unknown one", async () => {
    const id = await sha256Hex(unique("shared"));
    await recordDelivery({ source: "dash-one", id, eventType: null, body, receivedAtMs: NOW });
    await recordDelivery({ source: "dash-two", id, eventType: null, body, receivedAtMs: NOW + 1 });
    const found = await store().findById(["dash-one", "dash-two", "dash-three"], id);
    expect(found.map((delivery) => delivery.source)).toEqual(["dash-two", "dash-one"]);
    expect(await store().findById(["dash-one"], "nope")).toEqual([]);
  });
});
