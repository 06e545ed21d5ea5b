// Each configured forward destination's breaker, as /admin/metrics and the dashboard's overview show it.
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config";
import { destinationsOf } from "../../src/config/forwarding";
import { forwardDelivery } from "../../src/forwarding/forward";
import { readBreakers } from "../../src/forwarding/breakers";
import { FORWARD_SECRET, planBackend } from "../helpers/forward-backend";
import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import worker from "../../src/index";
import { ui } from "../http/ui/client";

const delivery = { source: "standard", deliveryId: "view", eventType: null, contentType: null, body: new TextEncoder().encode("{}"), idempotencyKey: "whi_view", attempt: 1 };

/** Vars with two destinations of `standard`: `forward` (healthy) and `down` (opened by one 503). */
async function twoDestinations(tag: string) {
  const healthy = await planBackend(`/view-healthy-${tag}`, { status: 200 });
  const down = `${await planBackend(`/view-down-${tag}`, { status: 503 })}?token=s3cr3t-query`;
  const vars = {
    STANDARD_FORWARD_URL: healthy,
    STANDARD_FORWARD_SECRET: FORWARD_SECRET,
    STANDARD_FORWARD_DOWN_URL: down,
    STANDARD_FORWARD_DOWN_SECRET: FORWARD_SECRET,
    STANDARD_FORWARD_DOWN_BREAKER_FAILURES: "1",
  };
  const [, downDestination] = destinationsOf(loadConfig({ ...env, ...vars }).forwarding, "standard");
  await expect(forwardDelivery(env, downDestination!, delivery, new AbortController().signal)).rejects.toThrow("503");
  return vars;
}

/** `GET /admin/metrics` under the test env with `vars` added: its status and text. */
async function metricsWith(vars: Record<string, string>) {
  const ctx = createExecutionContext();
  const request = new Request("https://inbox.example.com/admin/metrics", { headers: { authorization: `Bearer ${env.ADMIN_TOKEN}` } });
  const response = await worker.fetch(request, { ...env, ...vars } as Env, ctx);
  await waitOnExecutionContext(ctx);
  return { status: response.status, text: await response.text() };
}

describe("the breakers, shown", () => {
  it("are read once per configured destination, open and closed", async () => {
    const vars = await twoDestinations("t1");
    const breakers = await readBreakers({ ...env, ...vars } as Env);
    expect(breakers.map((b) => [b.prefix, b.name, b.status, b.failures])).toEqual([
      ["STANDARD", "forward", "closed", 0],
      ["STANDARD", "down", "open", 1],
    ]);
    expect(breakers[1]!.reopenAtMs).toBeGreaterThan(breakers[1]!.sinceMs!);
    // The origin only: the query's token is not shown.
    expect(JSON.stringify(breakers)).not.toContain("s3cr3t-query");
  });

  it("are gauges in /admin/metrics: the state, since when, the failures in a row", async () => {
    const vars = await twoDestinations("t2");
    const reply = await metricsWith(vars);
    expect(reply.status).toBe(200);
    const text = reply.text;
    expect(text).toContain('webhook_inbox_forward_breaker_state{source_prefix="STANDARD",destination="down",state="open"} 1\n');
    expect(text).toContain('webhook_inbox_forward_breaker_state{source_prefix="STANDARD",destination="down",state="closed"} 0\n');
    expect(text).toContain('webhook_inbox_forward_breaker_state{source_prefix="STANDARD",destination="forward",state="closed"} 1\n');
    expect(text).toContain('webhook_inbox_forward_breaker_failures{source_prefix="STANDARD",destination="down"} 1\n');
    const since = Number(/^webhook_inbox_forward_breaker_since_seconds\{source_prefix="STANDARD",destination="down"\} (\d+)$/m.exec(text)?.[1]);
    expect(since).toBeGreaterThan(1_700_000_000);
    expect(text).not.toContain("s3cr3t-query");
  });

  it("are listed on the dashboard's overview, each with its state", async () => {
    const vars = await twoDestinations("t3");
    const page = await ui("/ui", { env: vars });
    expect(page.status).toBe(200);
    expect(page.text).toContain("Forward destinations");
    expect(page.text).toMatch(/<tr data-breaker="open"><th scope="row">STANDARD<\/th><td>down<\/td>/);
    expect(page.text).toMatch(/<tr data-breaker="closed"><th scope="row">STANDARD<\/th><td>forward<\/td>/);
    expect(page.text).not.toContain("s3cr3t-query");
  });

  it("are not shown when no destination is configured", async () => {
    const page = await ui("/ui");
    expect(page.text).not.toContain("Forward destinations");
    expect((await metricsWith({})).text).not.toMatch(/^webhook_inbox_forward_breaker_state\{/m);
  });
});
