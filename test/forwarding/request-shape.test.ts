// What the backend receives, from a delivery that came in through the real receiver: its body byte
// for byte and content type, a Standard Webhooks signature, and none of the provider's headers.
import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { Webhook } from "standardwebhooks";
import { describe, expect, it } from "vitest";
import worker from "../../src/index";
import { idempotencyKey } from "../../src/processing/attempt";
import { defineHandlers } from "../../src/handler-api";
import { openStore } from "../../src/store";
import { backendCalls, bytesOf, FORWARD_SECRET, forwardingTo, planBackend } from "../helpers/forward-backend";
import { consume } from "../helpers/processing";
import { BASE_URL, standardHeaders } from "../helpers/signers";
import { deliveryRow } from "../helpers/store-db";
import { faultyStore } from "../helpers/store-faults";

const NO_HANDLERS = defineHandlers({});

/** Headers the HTTP stacks on the way add by themselves (workerd, Node): not the provider's, not ours. */
const TRANSPORT = new Set(["host", "content-length", "connection", "accept-encoding", "transfer-encoding", "cf-worker"]);
const OURS = new Set([
  "content-type",
  "user-agent",
  "webhook-id",
  "webhook-timestamp",
  "webhook-signature",
  "webhook-inbox-source",
  "webhook-inbox-delivery-id",
  "webhook-inbox-event-type",
  "webhook-inbox-attempt",
]);

/** Sends a signed `standard` delivery through the receiver, with `extraHeaders` on top; returns its ref. */
async function receive(id: string, body: string, extraHeaders: Record<string, string>, withEnv: Env) {
  const headers = { ...standardHeaders(body, { id }), ...extraHeaders };
  const ctx = createExecutionContext();
  const response = await worker.fetch(new Request(`${BASE_URL}/webhooks/standard`, { method: "POST", headers, body }), withEnv, ctx);
  await waitOnExecutionContext(ctx);
  expect(await response.json()).toMatchObject({ status: "stored" });
  return { source: "standard", id };
}

describe("the forwarded request", () => {
  it("carries the body byte for byte, its content type, and a signature standardwebhooks verifies under the forward secret", async () => {
    const url = await planBackend("/shape", { status: 200 });
    const forwardEnv = { ...env, ...forwardingTo("standard", url) } as Env;
    const body = '{"type":"invoice.paid","note":"crème brûlée ☕","amount":12345678901234567890}';
    const ref = await receive("msg_shape", body, { "content-type": "application/json; charset=utf-8" }, forwardEnv);
    expect((await consume([ref], NO_HANDLERS, forwardEnv)).outcomes[0]!.reason).toBe("done");

    const [call] = (await backendCalls("/shape")).calls;
    expect(call!.method).toBe("POST");
    expect(new TextDecoder().decode(bytesOf(call!.body))).toBe(body);
    expect(call!.headers["content-type"]).toBe("application/json; charset=utf-8");
    expect(new Webhook(FORWARD_SECRET).verify(body, call!.headers)).toMatchObject({ type: "invoice.paid" });
    // Not the provider's signature: that one was made with the source's own secret.
    expect(() => new Webhook(env.STANDARD_WEBHOOK_SECRET).verify(body, call!.headers)).toThrow();
    expect(call!.headers["webhook-id"]).toBe(await idempotencyKey(ref));
    expect(call!.headers).toMatchObject({
      "webhook-inbox-source": "standard",
      "webhook-inbox-delivery-id": "msg_shape",
      "webhook-inbox-event-type": "invoice.paid",
      "webhook-inbox-attempt": "1",
    });
  });

  it("forwards none of the provider's headers: no credential, no signature, nothing but the content type", async () => {
    const url = await planBackend("/no-credentials", { status: 200 });
    const forwardEnv = { ...env, ...forwardingTo("standard", url) } as Env;
    const credentials = {
      authorization: "Bearer provider-token-5e1f",
      cookie: "session=cookie-77aa",
      "x-api-key": "api-key-9b0c",
      "proxy-authorization": "Basic cHJveHk6a2V5",
      "x-provider-trace": "trace-3c3c",
    };
    const ref = await receive("msg_credentials", '{"type":"customer.updated"}', credentials, forwardEnv);
    await consume([ref], NO_HANDLERS, forwardEnv);
    const [call] = (await backendCalls("/no-credentials")).calls;
    const unexpected = Object.keys(call!.headers).filter((name) => !OURS.has(name) && !TRANSPORT.has(name));
    expect(unexpected).toEqual([]);
    const sent = JSON.stringify(call!.headers);
    for (const value of Object.values(credentials)) expect(sent).not.toContain(value);
  });

  it("keeps the same webhook-id on every attempt, each signed afresh", async () => {
    const url = await planBackend("/stable-id", { status: 503 }, { status: 200 });
    const forwardEnv = { ...env, ...forwardingTo("standard", url) } as Env;
    const body = '{"type":"invoice.paid"}';
    const ref = await receive("msg_stable", body, {}, forwardEnv);
    expect((await consume([ref], NO_HANDLERS, forwardEnv)).outcomes[0]!.reason).toBe("handler_error");
    expect((await consume([ref], NO_HANDLERS, forwardEnv)).outcomes[0]!.reason).toBe("done");
    const { calls } = await backendCalls("/stable-id");
    expect(calls.map((call) => call.headers["webhook-id"])).toEqual([await idempotencyKey(ref), await idempotencyKey(ref)]);
    expect(calls.map((call) => call.headers["webhook-inbox-attempt"])).toEqual(["1", "2"]);
    for (const call of calls) expect(new Webhook(FORWARD_SECRET).verify(body, call.headers)).toBeTruthy();
  });

  it("takes its content type from the claim: the database failing every statement but the claim and the commit uses up no attempt", async () => {
    const url = await planBackend("/claim-only", { status: 200 });
    const forwardEnv = { ...env, ...forwardingTo("standard", url) } as Env;
    const ref = await receive("msg_claim_only", "a=1&b=2", { "content-type": "application/x-www-form-urlencoded; charset=utf-8" }, forwardEnv);
    // The claim (readClaim, markTakeover) and the done mark (with D1's guard for a row gone, migrations/0011);
    // any other statement fails like a database outage.
    const claimAndCommit = /SELECT status, attempts|SET status = CASE|SET status = 'done'|INSERT INTO commit_guard/;
    const store = faultyStore((call) => (call.sql.every((text) => claimAndCommit.test(text)) ? undefined : "throw"));
    const { outcomes } = await consume([ref], NO_HANDLERS, { ...forwardEnv, ...store.bindings });
    expect(store.faulted).toEqual([]);
    expect(outcomes[0]).toEqual({ action: "ack", reason: "done" });
    expect(await deliveryRow(ref.source, ref.id)).toMatchObject({ status: "done", attempts: 1 });
    expect((await backendCalls("/claim-only")).calls[0]!.headers["content-type"]).toBe("application/x-www-form-urlencoded; charset=utf-8");
  });

  it("takes its content type from a takeover's claim too", async () => {
    const ref = await receive("msg_takeover_type", '{"type":"invoice.paid"}', { "content-type": "application/json; charset=utf-8" }, env);
    const claimed = await openStore(env).claim(ref, 7, { previousToken: 0, maxAttempts: 5 }, Date.now());
    expect(claimed).toMatchObject({ kind: "run", delivery: { contentType: "application/json; charset=utf-8" } });
  });
});
