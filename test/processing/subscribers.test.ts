/**
 * One delivery, several subscribers, each with its own progress (issue 26): the real consumer,
 * lease objects, queue producer and store (D1, and Postgres under test:postgres), real local HTTP
 * backends for the forward destination.
 */
import { env, exports } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { acceptsFilter, defineHandlers, PermanentError, subscribers, type Handler } from "../../src/handler-api";
import { openStore } from "../../src/store";
import { sql } from "../../src/sql";
import { adminWithEnv } from "../http/admin/client";
import { ui } from "../http/ui/client";
import { BASE_URL } from "../helpers/signers";
import { faultyQueue } from "../helpers/faults";
import { backendCalls, FORWARD_SECRET, forwardingTo, planBackend } from "../helpers/forward-backend";
import { capturingQueue, consume, createEffectTables, runRow, storeDelivery } from "../helpers/processing";
import { count, deliveryRow, recordDelivery } from "../helpers/store-db";

beforeAll(createEffectTables);

/** A code subscriber that records one keyed effect per delivery, and counts its runs. */
function recorder(note: string) {
  const seen = { runs: 0 };
  const handler: Handler = (_event, ctx) => {
    seen.runs++;
    return [ctx.sql`INSERT INTO unkeyed_effects (delivery_id, note) VALUES (${ctx.deliveryId}, ${note})`];
  };
  return { seen, handler };
}

const effects = (id: string, note: string) => count(sql`SELECT COUNT(*) AS n FROM unkeyed_effects WHERE delivery_id = ${id} AND note = ${note}`);

describe("three subscribers of one source: a code subscriber with effects, one that is refused, and a forward destination that is down, then back", () => {
  it("commits the effects once, fails the refused one alone, and delivers the forward once it is back, none re-running another", async () => {
    const ref = { source: "standard", id: "three-subscribers" };
    await storeDelivery(ref, { type: "invoice.paid", data: { amount: 4200 } }, "invoice.paid");
    const url = await planBackend("/three", { status: 503 }, { status: 503 }, { status: 200 });
    const ledger = recorder("ledger");
    let crmRuns = 0;
    const handlers = defineHandlers({
      standard: subscribers({
        ledger: { on: { "invoice.paid": ledger.handler } },
        crm: {
          on: {
            "*": () => {
              crmRuns++;
              throw new PermanentError("the CRM answered 422: unknown customer");
            },
          },
        },
      }),
    });
    const queue = capturingQueue();
    const vars = { ...forwardingTo("standard", url), DELIVERIES: queue.producer, RETRY_BASE_SECONDS: "1" } as Partial<Env>;

    expect((await consume([ref], handlers, vars)).outcomes[0]!.reason).toBe("fanned");
    const runs = queue.take();
    expect(runs.map((run) => run.subscriber)).toEqual(["ledger", "crm", "forward"]);

    // Each run on its own, in one batch.
    const first = await consume(runs, handlers, vars);
    expect(first.outcomes.map((outcome) => outcome.reason)).toEqual(["done", "failed", "handler_error"]);
    expect(await effects(ref.id, "ledger")).toBe(1);
    // The delivery waits on its forward: its summary says so.
    expect(await deliveryRow(ref.source, ref.id)).toMatchObject({ status: "processing", fanout: 3 });

    // The destination's retries: the code subscribers never run again.
    const forwardRun = [{ ...ref, subscriber: "forward" }];
    expect((await consume(forwardRun, handlers, vars)).outcomes[0]!.reason).toBe("handler_error");
    expect((await consume(forwardRun, handlers, vars)).outcomes[0]!.reason).toBe("done");
    expect(ledger.seen.runs).toBe(1);
    expect(crmRuns).toBe(1);
    expect(await effects(ref.id, "ledger")).toBe(1);
    expect((await backendCalls("/three")).calls).toHaveLength(3);

    expect(await runRow(ref, "ledger")).toMatchObject({ status: "done", attempts: 1 });
    expect(await runRow(ref, "crm")).toMatchObject({ status: "failed", attempts: 1, error: "PermanentError: the CRM answered 422: unknown customer" });
    expect(await runRow(ref, "forward")).toMatchObject({ status: "done", attempts: 3 });
    expect(await deliveryRow(ref.source, ref.id)).toMatchObject({ status: "failed", error: "crm: PermanentError: the CRM answered 422: unknown customer" });

    // The admin API shows each subscriber's own progress.
    const detail = await adminWithEnv(`/deliveries/standard/${ref.id}`, {});
    expect(detail.status).toBe(200);
    expect((detail.json as { runs: { subscriber: string; status: string; attempts: number }[] }).runs.map((run) => [run.subscriber, run.status, run.attempts])).toEqual([
      ["crm", "failed", 1],
      ["forward", "done", 3],
      ["ledger", "done", 1],
    ]);
  });
});

describe("a handler's context", () => {
  it("names the subscriber it runs for, each with an idempotency key of its own; a source's plain handlers run as `handler`", async () => {
    const seen: { subscriber: string; key: string }[] = [];
    const note: Handler = (_event, ctx) => void seen.push({ subscriber: ctx.subscriber, key: ctx.idempotencyKey });
    const handlers = defineHandlers({
      "ctx-subs": subscribers({
        ledger: { on: { "*": note } },
        // The filter from the handler API's one door: only invoices.
        crm: { on: { "*": note }, accepts: acceptsFilter({ field: "type", prefix: "invoice." }) },
      }),
      "ctx-plain": { "*": note },
    });
    const fanned = { source: "ctx-subs", id: "both" };
    await storeDelivery(fanned, { type: "invoice.paid" }, "invoice.paid");
    const queue = capturingQueue();
    expect((await consume([fanned], handlers, { DELIVERIES: queue.producer } as Partial<Env>)).outcomes[0]!.reason).toBe("fanned");
    await consume(queue.take(), handlers, { DELIVERIES: queue.producer } as Partial<Env>);
    const plain = { source: "ctx-plain", id: "one" };
    await storeDelivery(plain, { type: "invoice.paid" }, "invoice.paid");
    expect((await consume([plain], handlers)).outcomes[0]!.reason).toBe("done");
    // The CRM's filter keeps a charge from it: the ledger alone runs it, in the delivery's own row.
    const charge = { source: "ctx-subs", id: "charge" };
    await storeDelivery(charge, { type: "charge.succeeded" }, "charge.succeeded");
    expect((await consume([charge], handlers, { DELIVERIES: queue.producer } as Partial<Env>)).outcomes[0]!.reason).toBe("done");

    // The fanned-out runs share a batch: in either order.
    expect(seen.slice(0, 2).map((each) => each.subscriber).sort()).toEqual(["crm", "ledger"]);
    expect(seen.slice(2).map((each) => each.subscriber)).toEqual(["handler", "ledger"]);
    expect(new Set(seen.map((each) => each.key)).size).toBe(4);
    expect(await deliveryRow(charge.source, charge.id)).toMatchObject({ status: "done", subscriber: "ledger", fanout: null });
  });
});

describe("a subscriber's filter", () => {
  it("keeps a delivery from the subscriber it does not accept: one subscriber left runs it in the delivery's own row, no fan-out, no row more", async () => {
    const ref = { source: "filtered-subs", id: "only-ledger" };
    await storeDelivery(ref, { type: "invoice.paid", data: { amount: 50 } }, "invoice.paid");
    const ledger = recorder("ledger-only");
    const big = recorder("big-only");
    const handlers = defineHandlers({
      "filtered-subs": subscribers({
        ledger: { on: { "*": ledger.handler } },
        // Only invoices of 100 or more.
        big: { on: { "*": big.handler }, accepts: (delivery) => ((delivery.body as { data?: { amount?: number } }).data?.amount ?? 0) >= 100 },
      }),
    });
    const queue = capturingQueue();
    expect((await consume([ref], handlers, { DELIVERIES: queue.producer } as Partial<Env>)).outcomes[0]!.reason).toBe("done");
    expect(queue.sent).toEqual([]);
    expect([ledger.seen.runs, big.seen.runs]).toEqual([1, 0]);
    expect(await deliveryRow(ref.source, ref.id)).toMatchObject({ status: "done", fanout: null, subscriber: "ledger" });
    expect(await count(sql`SELECT COUNT(*) AS n FROM subscriber_runs WHERE source = ${ref.source} AND id = ${ref.id}`)).toBe(0);
  });

  it("sees the stored request headers", async () => {
    const ref = { source: "header-subs", id: "by-header" };
    await storeDelivery(ref, { type: "x" }, "x");
    let seen: string | null | undefined;
    const handlers = defineHandlers({
      "header-subs": subscribers({
        one: {
          on: { "*": () => undefined },
          accepts: (delivery) => {
            seen = delivery.header("Content-Type");
            return true;
          },
        },
      }),
    });
    expect((await consume([ref], handlers)).outcomes[0]!.reason).toBe("done");
    // storeDelivery stores no headers: the filter sees none rather than failing.
    expect(seen).toBeNull();
  });
});

describe("the fan-out survives its faults", () => {
  it("a queue that fails after the fan-out was recorded: the retry finds it fanned out and queues its runs, each once recorded", async () => {
    const ref = { source: "fan-faults", id: "queue-fails" };
    await storeDelivery(ref, { type: "a" }, "a");
    const handlers = defineHandlers({ "fan-faults": subscribers({ one: { on: { "*": () => undefined } }, two: { on: { "*": () => undefined } } }) });
    const broken = faultyQueue(null, (call) => (call.method === "send" || call.method === "sendBatch" ? "throw" : undefined));
    const failed = await consume([ref], handlers, { DELIVERIES: broken.queue } as Partial<Env>);
    expect(failed.outcomes[0]).toMatchObject({ action: "retry", reason: "infrastructure" });
    expect(await deliveryRow(ref.source, ref.id)).toMatchObject({ status: "processing", fanout: 2, attempts: 0 });

    const queue = capturingQueue();
    expect((await consume([ref], handlers, { DELIVERIES: queue.producer } as Partial<Env>)).outcomes[0]!.reason).toBe("fanned");
    expect(queue.take().map((run) => run.subscriber)).toEqual(["one", "two"]);
    const ran = await consume([{ ...ref, subscriber: "one" }, { ...ref, subscriber: "two" }], handlers, { DELIVERIES: queue.producer } as Partial<Env>);
    expect(ran.outcomes.map((outcome) => outcome.reason)).toEqual(["done", "done"]);
    expect(await deliveryRow(ref.source, ref.id)).toMatchObject({ status: "done", attempts: 0 });
    // A late copy of a run's message meets its settled run.
    expect((await consume([{ ...ref, subscriber: "one" }], handlers)).outcomes[0]!.reason).toMatch(/^(settled|busy)$/);
  });

  it("a run whose message was lost is found by the sweeper's walk", async () => {
    const ref = { source: "fan-sweep", id: "lost-run" };
    await storeDelivery(ref, { type: "a" }, "a");
    const handlers = defineHandlers({ "fan-sweep": subscribers({ one: { on: { "*": () => undefined } }, two: { on: { "*": () => undefined } } }) });
    expect((await consume([ref], handlers, { DELIVERIES: capturingQueue().producer } as Partial<Env>)).outcomes[0]!.reason).toBe("fanned");
    // Both messages lost. Past the never-attempted cutoff, the sweeper's walk sends them again.
    const later = Date.now() + 10 * 60_000;
    const stranded = await openStore(env).takeStranded({ neverAttemptedBeforeMs: later, retryWaitingBeforeMs: 0, processingBeforeMs: 0 }, later, 50);
    expect(stranded.filter((run) => run.source === ref.source).sort((a, b) => (a.subscriber! < b.subscriber! ? -1 : 1))).toEqual([
      { ...ref, subscriber: "one" },
      { ...ref, subscriber: "two" },
    ]);
  });

  it("a run whose subscriber is no longer configured fails, to be replayed once it is back", async () => {
    const ref = { source: "fan-gone", id: "gone" };
    await storeDelivery(ref, { type: "a" }, "a");
    const both = defineHandlers({ "fan-gone": subscribers({ one: { on: { "*": () => undefined } }, two: { on: { "*": () => undefined } } }) });
    expect((await consume([ref], both, { DELIVERIES: capturingQueue().producer } as Partial<Env>)).outcomes[0]!.reason).toBe("fanned");
    const onlyOne = defineHandlers({ "fan-gone": subscribers({ one: { on: { "*": () => undefined } } }) });
    const ran = await consume([{ ...ref, subscriber: "one" }, { ...ref, subscriber: "two" }], onlyOne);
    expect(ran.outcomes.map((outcome) => outcome.reason)).toEqual(["done", "failed"]);
    expect(await runRow(ref, "two")).toMatchObject({ status: "failed", error: expect.stringContaining('subscriber "two" is no longer configured') });
  });
});

describe("replay, per subscriber", () => {
  it("replays one subscriber's run alone: the others' handlers and effects do not run again", async () => {
    const ref = { source: "replay-subs", id: "one-run" };
    await storeDelivery(ref, { type: "a" }, "a");
    const ledger = recorder("replay-ledger");
    let crmFails = true;
    let crmRuns = 0;
    const handlers = defineHandlers({
      "replay-subs": subscribers({
        ledger: { on: { "*": ledger.handler } },
        crm: {
          on: {
            "*": () => {
              crmRuns++;
              if (crmFails) throw new PermanentError("CRM down for maintenance");
            },
          },
        },
      }),
    });
    const queue = capturingQueue();
    const vars = { DELIVERIES: queue.producer } as Partial<Env>;
    await consume([ref], handlers, vars);
    await consume(queue.take(), handlers, vars);
    expect(await deliveryRow(ref.source, ref.id)).toMatchObject({ status: "failed" });

    crmFails = false;
    const replayed = await adminWithEnv(`/deliveries/replay-subs/${ref.id}/replay?subscriber=crm`, vars, { method: "POST" });
    expect(replayed.status).toBe(202);
    expect(queue.sent).toEqual([{ ...ref, subscriber: "crm" }]);
    expect(await deliveryRow(ref.source, ref.id)).toMatchObject({ status: "processing" });
    expect((await consume(queue.take(), handlers, vars)).outcomes[0]!.reason).toBe("done");
    expect([ledger.seen.runs, crmRuns]).toEqual([1, 2]);
    expect(await effects(ref.id, "replay-ledger")).toBe(1);
    expect(await deliveryRow(ref.source, ref.id)).toMatchObject({ status: "done", error: null });
    // A done run is not replayed without force.
    expect((await adminWithEnv(`/deliveries/replay-subs/${ref.id}/replay?subscriber=ledger`, vars, { method: "POST" })).status).toBe(409);
  });

  it("replays a fanned-out delivery through its failed runs only (safe: what is done stays done)", async () => {
    const ref = { source: "replay-fanned", id: "whole" };
    await storeDelivery(ref, { type: "a" }, "a");
    const ledger = recorder("whole-ledger");
    let crmFails = true;
    const handlers = defineHandlers({
      "replay-fanned": subscribers({
        ledger: { on: { "*": ledger.handler } },
        crm: {
          on: {
            "*": () => {
              if (crmFails) throw new PermanentError("boom");
            },
          },
        },
      }),
    });
    const queue = capturingQueue();
    const vars = { DELIVERIES: queue.producer } as Partial<Env>;
    await consume([ref], handlers, vars);
    await consume(queue.take(), handlers, vars);
    crmFails = false;
    expect((await adminWithEnv(`/deliveries/replay-fanned/${ref.id}/replay`, vars, { method: "POST" })).status).toBe(202);
    expect(queue.sent).toEqual([{ ...ref, subscriber: "crm" }]);
    expect((await consume(queue.take(), handlers, vars)).outcomes[0]!.reason).toBe("done");
    expect(ledger.seen.runs).toBe(1);
    expect(await deliveryRow(ref.source, ref.id)).toMatchObject({ status: "done" });
  });

  it("replays in bulk one subscriber's failures in a time range, touching nothing else", async () => {
    const source = "bulk-subs";
    const handlersFailing = defineHandlers({
      [source]: subscribers({
        crm: {
          on: {
            "*": () => {
              throw new PermanentError("CRM down");
            },
          },
        },
        analytics: {
          on: {
            "*": () => {
              throw new PermanentError("analytics down");
            },
          },
        },
      }),
    });
    const queue = capturingQueue();
    const vars = { DELIVERIES: queue.producer } as Partial<Env>;
    const refs = ["bulk-1", "bulk-2", "bulk-3"].map((id) => ({ source, id }));
    for (const ref of refs) await storeDelivery(ref, { type: "a" }, "a");
    // One from before the range.
    const older = { source, id: "bulk-older" };
    await recordDelivery({ ...older, eventType: "a", body: new TextEncoder().encode('{"type":"a"}'), receivedAtMs: Date.now() - 2 * 3_600_000 });
    await consume([...refs, older], handlersFailing, vars);
    await consume(queue.take(), handlersFailing, vars);
    for (const ref of [...refs, older]) expect(await deliveryRow(source, ref.id)).toMatchObject({ status: "failed" });

    const since = new Date(Date.now() - 3_600_000).toISOString();
    const bulk = await adminWithEnv("/replay", vars, { method: "POST", body: { status: "failed", source, subscriber: "crm", since, limit: 100 } });
    expect(bulk.status).toBe(200);
    expect(bulk.json).toMatchObject({ replayed: 3, remaining: 0 });
    expect(
      queue
        .take()
        .map((run) => `${run.id}:${run.subscriber}`)
        .sort(),
    ).toEqual(["bulk-1:crm", "bulk-2:crm", "bulk-3:crm"]);
    for (const ref of refs) {
      expect(await runRow(ref, "crm")).toMatchObject({ status: "received", attempts: 0 });
      expect(await runRow(ref, "analytics")).toMatchObject({ status: "failed", attempts: 1 });
    }
    expect(await runRow(older, "crm")).toMatchObject({ status: "failed", attempts: 1 });
    expect(await deliveryRow(source, older.id)).toMatchObject({ status: "failed" });
    // The listing by subscriber and status reads each subscriber's own runs.
    const listed = await adminWithEnv(`/deliveries?source=${source}&subscriber=analytics&status=failed`, {});
    expect((listed.json as { deliveries: { id: string }[] }).deliveries.map((delivery) => delivery.id).sort()).toEqual(["bulk-1", "bulk-2", "bulk-3", "bulk-older"]);
    const crmFailed = await adminWithEnv(`/deliveries?source=${source}&subscriber=crm&status=failed`, {});
    expect((crmFailed.json as { deliveries: { id: string }[] }).deliveries.map((delivery) => delivery.id)).toEqual(["bulk-older"]);
    // And /admin/metrics counts each subscriber's failures.
    const metrics = await metricsText();
    expect(metrics).toContain('webhook_inbox_failed_by_subscriber{source="bulk-subs",subscriber="analytics"} 4');
    expect(metrics).toContain('webhook_inbox_failed_by_subscriber{source="bulk-subs",subscriber="crm"} 1');
  });
});

/** The Worker's /admin/metrics, as text. */
async function metricsText(): Promise<string> {
  const response = await exports.default.fetch(new Request(`${BASE_URL}/admin/metrics`, { headers: { authorization: `Bearer ${env.ADMIN_TOKEN}` } }));
  expect(response.status).toBe(200);
  return response.text();
}

describe("the dashboard", () => {
  it("shows a fanned-out delivery's runs, names escaped, and replays one failed run alone", async () => {
    const ref = { source: "ui-subs", id: "runs" };
    await storeDelivery(ref, { type: "a" }, "a");
    let failing = true;
    const handlers = defineHandlers({
      "ui-subs": subscribers({
        ledger: { on: { "*": () => undefined } },
        crm: {
          on: {
            "*": () => {
              if (failing) throw new PermanentError("<b>CRM</b> refused");
            },
          },
        },
      }),
    });
    const queue = capturingQueue();
    const vars = { DELIVERIES: queue.producer } as Partial<Env>;
    await consume([ref], handlers, vars);
    await consume(queue.take(), handlers, vars);

    const page = await ui(`/ui/deliveries/ui-subs/runs`);
    expect(page.status).toBe(200);
    expect(page.text).toContain('<h2 id="subscribers">Subscribers</h2>');
    expect(page.text).toContain("fanned out to 2 (below)");
    expect(page.text).toContain("PermanentError: &lt;b&gt;CRM&lt;/b&gt; refused");
    expect(page.text).not.toContain("<b>CRM</b>");
    expect(page.text).toContain('<input type="hidden" name="subscriber" value="crm"/>');
    expect(page.text).not.toContain('value="ledger"');

    failing = false;
    const replayed = await ui(`/ui/deliveries/ui-subs/runs/replay`, { form: { subscriber: "crm" }, env: vars });
    expect(replayed.status).toBe(303);
    expect(queue.take()).toEqual([{ ...ref, subscriber: "crm" }]);
    expect(await runRow(ref, "crm")).toMatchObject({ status: "received", attempts: 0 });
    expect(await runRow(ref, "ledger")).toMatchObject({ status: "done", attempts: 1 });
  });
});

describe("forward destinations by vars", () => {
  it("each is a subscriber named by its var, with its own filter: a delivery it does not accept is not sent to it", async () => {
    const url = await planBackend("/named-main", { status: 200 }, { status: 200 });
    const crmUrl = await planBackend("/named-crm", { status: 200 });
    const vars = {
      ...forwardingTo("standard", url),
      STANDARD_FORWARD_CRM_URL: crmUrl,
      STANDARD_FORWARD_CRM_SECRET: FORWARD_SECRET,
      STANDARD_FORWARD_CRM_FILTER: JSON.stringify({ field: "type", equals: "invoice.paid" }),
    } as Partial<Env>;
    const queue = capturingQueue();
    const paid = { source: "standard", id: "named-paid" };
    const other = { source: "standard", id: "named-other" };
    await storeDelivery(paid, { type: "invoice.paid" }, "invoice.paid");
    await storeDelivery(other, { type: "customer.created" }, "customer.created");
    const handlers = defineHandlers({});
    const first = await consume([paid, other], handlers, { ...vars, DELIVERIES: queue.producer } as Partial<Env>);
    expect(first.outcomes.map((outcome) => outcome.reason)).toEqual(["fanned", "done"]);
    expect(queue.sent).toEqual([
      { ...paid, subscriber: "forward" },
      { ...paid, subscriber: "crm" },
    ]);
    expect(await deliveryRow(other.source, other.id)).toMatchObject({ status: "done", subscriber: "forward", fanout: null });
    expect((await consume(queue.take(), handlers, vars)).outcomes.map((outcome) => outcome.reason)).toEqual(["done", "done"]);
    expect((await backendCalls("/named-crm")).calls.map((call) => call.headers["webhook-inbox-delivery-id"])).toEqual(["named-paid"]);
    expect((await backendCalls("/named-main")).calls).toHaveLength(2);
  });
});
