/**
 * `GET /admin/metrics`: the overview in Prometheus' text format, behind the bearer token, served
 * from the overview's snapshot (store/d1/overview.ts).
 */
import { env, exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { renderMetrics } from "../../../src/http/admin/metrics";
import { openStore } from "../../../src/store";
import { BASE_URL } from "../../helpers/signers";
import { recordDelivery } from "../../helpers/store-db";
import { adminWithEnv } from "./client";

const body = new TextEncoder().encode("{}");

function get(token: string | null): Promise<Response> {
  const headers: Record<string, string> = token === null ? {} : { authorization: `Bearer ${token}` };
  return exports.default.fetch(new Request(`${BASE_URL}/admin/metrics`, { headers }));
}

describe("GET /admin/metrics", () => {
  it("counts the duplicates answered per source, as a counter", async () => {
    const delivery = { source: "metrics-dup", id: "d-1", eventType: null, body, receivedAtMs: Date.now() };
    const before = Number(/^webhook_inbox_duplicates_total\{source="metrics-dup"\} (\d+)$/m.exec(await (await get(env.ADMIN_TOKEN)).text())?.[1] ?? 0);
    const store = openStore(env);
    const ctx = { waitUntil: () => {} };
    expect(await store.record(delivery, ctx)).toBe("stored");
    expect(await store.record(delivery, ctx)).toBe("duplicate");
    expect(await store.record(delivery, ctx)).toBe("duplicate");
    const text = await (await get(env.ADMIN_TOKEN)).text();
    expect(text).toContain(`webhook_inbox_duplicates_total{source="metrics-dup"} ${before + 2}\n`);
  });

  it("counts deliveries by source and status, the oldest waiting and the unhandled, in the text format", async () => {
    const now = Date.now();
    const store = openStore(env);
    for (const [id, fate] of [
      ["m-1", "done"],
      ["m-2", "unhandled"],
      ["m-3", "failed"],
      ["m-4", "received"],
    ] as const) {
      const ref = { source: "metrics", id };
      await recordDelivery({ ...ref, eventType: null, body, receivedAtMs: now - 90_000 });
      // As the consumer leaves them, under a lease token of `now`.
      if (fate === "done" || fate === "unhandled") expect(await store.commitDone(ref, now, { handled: fate === "done", effects: [] }, now)).toEqual({ kind: "committed" });
      if (fate === "failed") expect(await store.recordResult(ref, now, { kind: "failed", error: "boom" }, now)).toBe(1);
    }
    const response = await get(env.ADMIN_TOKEN);
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toBe("text/plain; version=0.0.4; charset=utf-8");
    expect(response.headers.get("cache-control")).toBe("no-store");
    const text = await response.text();
    expect(text).toContain("# TYPE webhook_inbox_deliveries gauge");
    for (const [status, n] of [
      ["received", 1],
      ["processing", 0],
      ["done", 2],
      ["failed", 1],
    ] as const) {
      expect(text).toContain(`webhook_inbox_deliveries{source="metrics",status="${status}"} ${n}\n`);
    }
    expect(text).toMatch(/^webhook_inbox_unhandled_deliveries 1$/m);
    expect(text).toContain("# TYPE webhook_inbox_duplicates_total counter\n");
    const oldest = Number(/^webhook_inbox_oldest_waiting_seconds (\d+)$/m.exec(text)![1]);
    expect(oldest).toBeGreaterThanOrEqual(90);
    // Every line is a comment or `name{labels} value`.
    for (const line of text.trimEnd().split("\n")) expect(line).toMatch(/^(# (HELP|TYPE) .+|[a-z_0-9]+(\{[^}]*\})? -?\d+(\.\d+)?)$/);
  });

  it("escapes label values", () => {
    const text = renderMetrics(
      {
        asOf: new Date(0).toISOString(),
        counts: { received: 0, processing: 0, done: 1, failed: 0, filtered: 0 },
        bySource: { 'we"ird\\\nname': { received: 0, processing: 0, done: 1, failed: 0, filtered: 0 } },
        unhandled: 0,
        duplicates: 2,
        duplicatesBySource: { 'we"ird\\\nname': 2 },
        oldestWaitingSeconds: null,
        last24h: { received: 0, failed: 0, failureRate: null },
        hourly: [],
      },
      5_000,
    );
    expect(text).toContain('webhook_inbox_deliveries{source="we\\"ird\\\\\\nname",status="done"} 1\n');
    expect(text).toMatch(/^webhook_inbox_counts_age_seconds 5$/m);
    expect(text).toContain('webhook_inbox_duplicates_total{source="we\\"ird\\\\\\nname"} 2\n');
  });

  it("is closed without the bearer token, and while ADMIN_TOKEN is unset", async () => {
    expect((await get(null)).status).toBe(401);
    expect((await get("wrong")).status).toBe(401);
    expect((await adminWithEnv("/metrics", { ADMIN_TOKEN: undefined }, { token: "anything" })).status).toBe(503);
  });
});
