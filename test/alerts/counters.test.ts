/**
 * The counters alerting adds off the hot path, on either store: the receiver's signature failures
 * (written after the answer, at most once a second per source and isolate, carrying what came
 * between), the 401 itself counted through the Worker, and the consumer's heartbeat (at most once a
 * minute per isolate).
 */
import { env, exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { noteSignatureFailure, SIGNATURE_NOTE_EVERY_MS } from "../../src/http/signature-failures";
import { CONSUMER_HEARTBEAT_EVERY_MS, noteConsumerHeartbeat } from "../../src/processing/consumer-heartbeat";
import { openStore } from "../../src/store";
import { standardRequest } from "../helpers/signers";

/** An execution context whose waitUntil promises the test awaits. */
function collecting() {
  const promises: Promise<unknown>[] = [];
  return { ctx: { waitUntil: (promise: Promise<unknown>) => void promises.push(promise) }, settle: () => Promise.all(promises) };
}

const signatureFailures = async (source: string, sinceMs: number) => (await openStore(env).alerts.readings(sinceMs)).signatureFailures[source] ?? 0;

describe("signature failures", () => {
  it("are written at most once a second per source, each write carrying the failures since the last", async () => {
    const t = Date.parse("2026-12-06T09:00:00.000Z");
    const { ctx, settle } = collecting();
    for (let index = 0; index < 5; index++) noteSignatureFailure(env, ctx, "sig-throttle", t + index);
    await settle();
    expect(await signatureFailures("sig-throttle", t)).toBe(1);
    noteSignatureFailure(env, ctx, "sig-throttle", t + SIGNATURE_NOTE_EVERY_MS);
    await settle();
    expect(await signatureFailures("sig-throttle", t)).toBe(6);
  });

  it("are counted for a request the receiver refused with 401", async () => {
    const before = await signatureFailures("standard", Date.now() - 60_000);
    // Signed with another source's secret: a signature that does not verify.
    const request = standardRequest('{"type":"x"}', { id: "msg_bad_sig", secret: "whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD" });
    const response = await exports.default.fetch(request);
    expect(response.status).toBe(401);
    // Written after the answer (waitUntil): poll briefly.
    let after = before;
    for (let tries = 0; tries < 50 && after === before; tries++) {
      await new Promise((resolve) => setTimeout(resolve, 20));
      after = await signatureFailures("standard", Date.now() - 60_000);
    }
    expect(after).toBe(before + 1);
  });
});

describe("the consumer's heartbeat", () => {
  it("is noted at most once a minute per isolate", async () => {
    const t = Date.parse("2026-12-06T09:00:00.000Z");
    const heartbeat = async () => (await openStore(env).alerts.readings(0)).heartbeats.consumer;
    await noteConsumerHeartbeat(env, t);
    expect(await heartbeat()).toBe(t);
    await noteConsumerHeartbeat(env, t + 1_000);
    expect(await heartbeat()).toBe(t);
    await noteConsumerHeartbeat(env, t + CONSUMER_HEARTBEAT_EVERY_MS);
    expect(await heartbeat()).toBe(t + CONSUMER_HEARTBEAT_EVERY_MS);
  });
});
