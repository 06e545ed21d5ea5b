// A config typo answers 503 and holds queued work back; it never fails a delivery.
import { createExecutionContext, createMessageBatch, getQueueResult, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import worker from "../../src/index";
import { CONFIG_RETRY_DELAY_SECONDS } from "../../src/processing/config-wait";
import { DEAD_LETTER_QUEUE } from "../../src/processing/messages";
import { deliveryRows } from "../helpers/store-db";
import { storeDelivery } from "../helpers/processing";
import { BASE_URL, standardRequest } from "../helpers/signers";

// Each bad in its own way; the values are distinctive so a leak would show.
const BAD_VARS = { MAX_ATTEMPTS: "7x7x7", RETENTION_DAYS: "2", PUBLIC_BASE_URL: "no-url-4f7c9" };
const badEnv = { ...env, ...BAD_VARS } as Env;

async function fetchWith(request: Request, withEnv: Env): Promise<Response> {
  const ctx = createExecutionContext();
  const response = await worker.fetch(request, withEnv, ctx);
  await waitOnExecutionContext(ctx);
  return response;
}

describe("an invalid configuration", () => {
  it("answers a signed delivery 503 config_invalid (retryable), not 500, and stores nothing", async () => {
    const response = await fetchWith(standardRequest(JSON.stringify({ type: "t" }), { id: "msg_config_invalid" }), badEnv);
    expect(response.status).toBe(503);
    expect(response.headers.get("retry-after")).toBe("300");
    expect(await response.json()).toEqual({ error: "config_invalid", message: expect.stringContaining("/health") });
    expect((await deliveryRows("standard")).map((row) => row.id)).not.toContain("msg_config_invalid");
  });

  it("answers every other route 503 config_invalid too (admin, unknown paths)", async () => {
    const admin = new Request(`${BASE_URL}/admin/stats`, { headers: { authorization: `Bearer ${env.ADMIN_TOKEN}` } });
    for (const request of [admin, new Request(`${BASE_URL}/nowhere`)]) {
      const response = await fetchWith(request, badEnv);
      expect(response.status).toBe(503);
      expect(((await response.json()) as { error: string }).error).toBe("config_invalid");
    }
  });

  it("makes GET /health answer 503 naming each bad var and its problem, with none of the values", async () => {
    const response = await fetchWith(new Request(`${BASE_URL}/health`), badEnv);
    expect(response.status).toBe(503);
    const text = await response.text();
    const health = JSON.parse(text) as { status: string; problems: { variables: string[]; problem: string }[] };
    expect(health.status).toBe("config_invalid");
    expect(health.problems.flatMap((problem) => problem.variables).sort()).toEqual(Object.keys(BAD_VARS).sort());
    for (const problem of health.problems) expect(problem.problem).toMatch(/^must /);
    for (const value of Object.values(BAD_VARS)) expect(text).not.toContain(value);
  });

  it("names a combined problem once, with both vars", async () => {
    const response = await fetchWith(new Request(`${BASE_URL}/health`), { ...env, RETENTION_DAYS: "5", BODY_RETENTION_DAYS: "6" } as Env);
    expect(response.status).toBe(503);
    expect(await response.json()).toEqual({
      status: "config_invalid",
      problems: [{ variables: ["BODY_RETENTION_DAYS", "RETENTION_DAYS"], problem: "BODY_RETENTION_DAYS must not exceed RETENTION_DAYS" }],
    });
  });

  it("leaves GET /health 200 ok with a valid configuration", async () => {
    const response = await fetchWith(new Request(`${BASE_URL}/health`), env);
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ status: "ok" });
  });

  for (const queue of ["webhook-deliveries", DEAD_LETTER_QUEUE]) {
    it(`retries a whole batch of ${queue} with a delay, and changes no delivery`, async () => {
      const refs = [1, 2, 3].map((n) => ({ source: `config-wait-${queue}`, id: `d-${n}` }));
      for (const ref of refs) await storeDelivery(ref);
      const before = await deliveryRows(refs[0]!.source);
      const batch = createMessageBatch(
        queue,
        refs.map((body, n) => ({ id: `config-${queue}-${n}`, timestamp: new Date(), attempts: 1, body })),
      );
      // The test batch records retryAll() but not its options: spy to see the delay asked for.
      const delays: (number | undefined)[] = [];
      const retryAll = batch.retryAll.bind(batch);
      batch.retryAll = (options?: QueueRetryOptions) => {
        delays.push(options?.delaySeconds);
        retryAll(options);
      };
      const ctx = createExecutionContext();
      await worker.queue(batch, badEnv);
      await waitOnExecutionContext(ctx);
      const result = await getQueueResult(batch, ctx);
      expect(result.retryBatch.retry).toBe(true);
      expect(delays).toEqual([CONFIG_RETRY_DELAY_SECONDS]);
      expect(result.explicitAcks).toEqual([]);
      expect(result.retryMessages).toEqual([]);
      const after = await deliveryRows(refs[0]!.source);
      expect(after.map((row) => [row.status, row.attempts, row.updated_at])).toEqual(before.map((row) => [row.status, row.attempts, row.updated_at]));
      expect(after.every((row) => row.status === "received")).toBe(true);
    });
  }
});
