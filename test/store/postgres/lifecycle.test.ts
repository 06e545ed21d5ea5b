/**
 * A delivery's state in Postgres as processing moves it (src/store/postgres/lifecycle.ts), on a real
 * Postgres: the claim's read and takeover, the done mark with the handler's effects in one fenced
 * transaction, the fenced result marks, the unhandled count, the attempt history, and the order
 * guard's upsert against the forward-only trigger. The same rules as the D1 store's
 * (test/processing, test/store). Each test uses sources of its own: the database is shared.
 */
import { env } from "cloudflare:workers";
import { DatabaseError } from "pg";
import { describe, expect, it } from "vitest";
import type { DeliveryRef } from "../../../src/delivery-ref";
import { createOrderGuard } from "../../../src/processing/order-guard";
import { sql, SqlStatement } from "../../../src/sql";
import { attemptLogFromColumn, MAX_ATTEMPT_LOG } from "../../../src/store/attempts";
import { clientPerOperation, isRaised, isStatementError, withClient, type Queryable } from "../../../src/store/postgres/client";
import { claim, commitDone, entityVersion, recordResult } from "../../../src/store/postgres/lifecycle";
import { CUT_SHORT } from "../../../src/store/run-result";
import { postgresStore } from "../../../src/store/postgres";
import { insertDeliveries } from "../../../src/store/postgres/record";

const hyperdrive = env.HYPERDRIVE!;
const connections = clientPerOperation(hyperdrive);
const db = <T>(fn: (q: Queryable) => Promise<T>) => withClient(hyperdrive, fn);
const NOW = Date.parse("2026-12-01T12:00:00.000Z");
const BODY = '{"id":"evt_1","type":"payment_intent.succeeded"}';

/** A fresh delivery, stored as the receiver stores it, with a source no other test uses. */
async function received(options: { headers?: string | null } = {}): Promise<DeliveryRef> {
  const ref = { source: `pg-life-${crypto.randomUUID().slice(0, 8)}`, id: "evt_1" };
  const headers = options.headers === undefined ? JSON.stringify([["user-agent", "Stripe/1.0"], ["content-type", "application/json; charset=utf-8"]]) : options.headers;
  await db((q) => insertDeliveries(q, [{ ...ref, eventType: "payment_intent.succeeded", body: new TextEncoder().encode(BODY), receivedAtMs: NOW, headers }]));
  return ref;
}

interface Row {
  status: string;
  attempts: number;
  error: string | null;
  handled: boolean | null;
  lease_token: string | null;
  commit_token: string | null;
  attempt_log: unknown;
}

async function row(ref: DeliveryRef): Promise<Row> {
  return db(async (q) => (await q.query<Row>("SELECT status, attempts, error, handled, lease_token, commit_token, attempt_log FROM deliveries WHERE source = $1 AND id = $2", [ref.source, ref.id])).rows[0]!);
}

/** The row's attempt history as the dashboard reads it. */
async function history(ref: DeliveryRef) {
  const { attempt_log } = await row(ref);
  return attemptLogFromColumn(attempt_log === null ? null : JSON.stringify(attempt_log));
}

async function unhandledCount(source: string): Promise<number> {
  return db(async (q) => Number((await q.query<{ unhandled: string }>("SELECT unhandled FROM inbox_counts WHERE source = $1", [source])).rows[0]?.unhandled ?? 0));
}

async function payments(deliveryId: string): Promise<number> {
  return db(async (q) => (await q.query("SELECT 1 FROM payments WHERE delivery_id = $1", [deliveryId])).rows.length);
}

const payment = (deliveryId: string, amount: number | string = 100): SqlStatement =>
  sql`INSERT INTO payments (delivery_id, customer, amount, currency, created_at) VALUES (${deliveryId}, ${"cus_1"}, ${amount}, ${"eur"}, ${new Date(NOW).toISOString()}) ON CONFLICT DO NOTHING`;

describe("claim", () => {
  it("reads a free lease's delivery: its first run, body, event type and content type, and writes nothing", async () => {
    const ref = await received();
    const claimed = await db((q) => claim(q, ref, 100, null, NOW));
    expect(claimed).toEqual({
      kind: "run",
      attempt: 1,
      delivery: {
        eventType: "payment_intent.succeeded",
        receivedAt: new Date(NOW).toISOString(),
        body: new TextEncoder().encode(BODY),
        contentType: "application/json; charset=utf-8",
        headers: [
          ["user-agent", "Stripe/1.0"],
          ["content-type", "application/json; charset=utf-8"],
        ],
      },
      last: null,
    });
    expect(claimed.kind === "run" && claimed.delivery.body.constructor).toBe(Uint8Array);
    expect(await row(ref)).toMatchObject({ status: "received", attempts: 0, lease_token: null });
  });

  it("has no content type without stored headers", async () => {
    const ref = await received({ headers: null });
    expect(await db((q) => claim(q, ref, 100, null, NOW))).toMatchObject({ kind: "run", delivery: { contentType: null } });
  });

  it("finds nothing to do for a settled delivery, an unknown one, or behind a newer recorded takeover", async () => {
    const done = await received();
    expect(await commitDone(connections, done, 100, { handled: true, effects: [] }, NOW)).toEqual({ kind: "committed" });
    expect(await db((q) => claim(q, done, 200, null, NOW))).toEqual({ kind: "gone" });
    expect(await db((q) => claim(q, { source: done.source, id: "nope" }, 200, null, NOW))).toEqual({ kind: "gone" });

    const taken = await received();
    expect(await db((q) => claim(q, taken, 300, { previousToken: 100, maxAttempts: 5 }, NOW))).toMatchObject({ kind: "run" });
    expect(await db((q) => claim(q, taken, 250, null, NOW))).toEqual({ kind: "gone" });
    expect(await db((q) => claim(q, taken, 301, null, NOW))).toMatchObject({ kind: "run" });
  });

  it("records a takeover as processing under its token, counting a vanished run only when it was recorded", async () => {
    const ref = await received();
    // The first run was never seen by the database: it counts nothing.
    expect(await db((q) => claim(q, ref, 200, { previousToken: 100, maxAttempts: 5 }, NOW))).toMatchObject({ kind: "run", attempt: 1 });
    expect(await row(ref)).toMatchObject({ status: "processing", attempts: 0, lease_token: "200" });
    // The recorded takeover vanished too: the next takeover counts it.
    expect(await db((q) => claim(q, ref, 300, { previousToken: 200, maxAttempts: 5 }, NOW + 1000))).toMatchObject({ kind: "run", attempt: 2 });
    expect(await row(ref)).toMatchObject({ status: "processing", attempts: 1, lease_token: "300" });
    expect(await history(ref)).toEqual([
      { attempt: 1, at: null, ms: null, outcome: "vanished", error: "the worker's lease ran out without a result" },
    ]);
    // The same claim again (a retry of a statement that landed) changes and counts nothing.
    expect(await db((q) => claim(q, ref, 300, { previousToken: 200, maxAttempts: 5 }, NOW + 2000))).toMatchObject({ kind: "run", attempt: 2 });
    expect(await row(ref)).toMatchObject({ attempts: 1 });
    expect(await history(ref)).toHaveLength(1);
  });

  it("counts a vanished run whose token the lease object lost (0) when it was recorded", async () => {
    const ref = await received();
    await db((q) => claim(q, ref, 200, { previousToken: 100, maxAttempts: 5 }, NOW));
    expect(await db((q) => claim(q, ref, 300, { previousToken: 0, maxAttempts: 5 }, NOW))).toMatchObject({ kind: "run", attempt: 2 });
  });

  it("gives up when the counted vanished run was the MAX_ATTEMPTS-th, and says so again to the same token and to the next holder (its dead letter may not have gone out)", async () => {
    const ref = await received();
    await db((q) => claim(q, ref, 100, { previousToken: 0, maxAttempts: 2 }, NOW));
    await db((q) => claim(q, ref, 200, { previousToken: 100, maxAttempts: 2 }, NOW)); // vanished run 1
    const gaveUp = await db((q) => claim(q, ref, 300, { previousToken: 200, maxAttempts: 2 }, NOW)); // vanished run 2
    expect(gaveUp).toEqual({ kind: "gave_up", attempts: 2, error: "gave up: the worker kept crashing (2 attempts without a result)" });
    expect(await row(ref)).toMatchObject({ status: "failed", attempts: 2, lease_token: "300" });
    expect(await db((q) => claim(q, ref, 300, { previousToken: 200, maxAttempts: 2 }, NOW))).toEqual(gaveUp);
    expect(await row(ref)).toMatchObject({ attempts: 2 });
    // The holder of token 300 did not settle the lease (it died, or the dead-letter queue refused):
    // the next takeover finds the row failed under that token and is told, so the dead letter goes out.
    expect(await db((q) => claim(q, ref, 400, { previousToken: 300, maxAttempts: 2 }, NOW))).toEqual(gaveUp);
    expect(await row(ref)).toMatchObject({ status: "failed", attempts: 2, error: gaveUp.kind === "gave_up" ? gaveUp.error : "" });
    // Someone else's failure is not: a takeover that did not follow the failing holder finds nothing.
    expect(await db((q) => claim(q, ref, 500, { previousToken: 450, maxAttempts: 2 }, NOW))).toEqual({ kind: "gone" });
  });
});

describe("commitDone", () => {
  it("commits the effects and the done mark together, counting the run", async () => {
    const ref = await received();
    const result = await commitDone(connections, ref, 100, { handled: true, effects: [payment(`${ref.source}:1`)], run: { startedAtMs: NOW - 40 } }, NOW);
    expect(result).toEqual({ kind: "committed" });
    expect(await payments(`${ref.source}:1`)).toBe(1);
    expect(await row(ref)).toMatchObject({ status: "done", attempts: 1, handled: true, error: null, lease_token: "100", commit_token: "100" });
    expect(await history(ref)).toEqual([{ attempt: 1, at: "2026-12-01T11:59:59.960Z", ms: 40, outcome: "done", error: null }]);
  });

  it("binds a handler's values as Postgres takes them: bytes as bytea, a bigint, a boolean, NULL", async () => {
    const ref = await received();
    const name = `${ref.source}:values`;
    const bytes = new Uint8Array([0, 1, 254, 255]);
    const effect = sql`INSERT INTO inbox_marks (name, value)
      VALUES (${name}, encode(${bytes}::bytea, 'hex') || ' ' || ${9_007_199_254_740_993n}::bigint || ' ' || ${true}::boolean || ' ' || coalesce(${null}::text, 'null'))`;
    try {
      expect(await commitDone(connections, ref, 100, { handled: true, effects: [effect] }, NOW)).toEqual({ kind: "committed" });
      const { rows } = await db((q) => q.query<{ value: string }>("SELECT value FROM inbox_marks WHERE name = $1", [name]));
      expect(rows[0]?.value).toBe("0001feff 9007199254740993 true null");
    } finally {
      await db((q) => q.query("DELETE FROM inbox_marks WHERE name = $1", [name]));
    }
  });

  it("commits nothing when an effect violates a constraint, and answers refused", async () => {
    const ref = await received();
    const taken = `${ref.source}:taken`;
    await db((q) => q.query("INSERT INTO payments (delivery_id, amount, currency, created_at) VALUES ($1, 1, 'eur', 'x')", [taken]));
    // The first effect is fine, the second collides with the row above (no ON CONFLICT).
    const effects = [payment(`${ref.source}:2`), sql`INSERT INTO payments (delivery_id, amount, currency, created_at) VALUES (${taken}, ${5}, ${"eur"}, ${"x"})`];
    const result = await commitDone(connections, ref, 100, { handled: true, effects }, NOW);
    expect(result).toMatchObject({ kind: "refused", permanent: false });
    expect(result.kind === "refused" && isStatementError(result.error)).toBe(true);
    expect(await payments(`${ref.source}:2`)).toBe(0);
    expect(await row(ref)).toMatchObject({ status: "received", attempts: 0, commit_token: null });
  });

  it("refuses a value of the wrong type the same way", async () => {
    const ref = await received();
    const result = await commitDone(connections, ref, 100, { handled: true, effects: [payment(`${ref.source}:x`, "a hundred")] }, NOW);
    expect(result).toMatchObject({ kind: "refused", permanent: false });
    expect(await row(ref)).toMatchObject({ status: "received" });
  });

  it("refuses a D1 statement, for good, and commits nothing", async () => {
    const ref = await received();
    const d1Statement = {} as D1PreparedStatement;
    const result = await commitDone(connections, ref, 100, { handled: true, effects: [payment(`${ref.source}:3`), d1Statement] }, NOW);
    expect(result).toMatchObject({ kind: "refused", permanent: true });
    expect(result.kind === "refused" && String(result.error)).toMatch(/D1 statement.*ctx\.sql/);
    expect(await payments(`${ref.source}:3`)).toBe(0);
    expect(await row(ref)).toMatchObject({ status: "received" });
  });

  it("refuses an effect that would end the transaction", async () => {
    const ref = await received();
    const result = await commitDone(connections, ref, 100, { handled: true, effects: [sql`COMMIT`, payment(`${ref.source}:4`)] }, NOW);
    expect(result).toMatchObject({ kind: "refused", permanent: true });
    expect(await row(ref)).toMatchObject({ status: "received" });
  });

  it("refuses transaction control behind comments, nested ones too, as the server would read it", async () => {
    const ref = await received();
    const hidden = new SqlStatement(["/* a note /* nested */ still the note */ -- and a line\n  ROLLBACK"], []);
    const result = await commitDone(connections, ref, 100, { handled: true, effects: [hidden, payment(`${ref.source}:4b`)] }, NOW);
    expect(result).toMatchObject({ kind: "refused", permanent: true });
    expect(result.kind === "refused" && String(result.error)).toMatch(/may not control the transaction it runs in: ROLLBACK/);
    expect(await payments(`${ref.source}:4b`)).toBe(0);
    expect(await row(ref)).toMatchObject({ status: "received" });
  });

  it("runs an effect as one statement: a ROLLBACK after a semicolon is refused by the server, and nothing commits", async () => {
    const ref = await received();
    // Without values pg would use the simple protocol, which runs both: the mark undone, the next effect autocommitted.
    const twoInOne = new SqlStatement([`INSERT INTO payments (delivery_id, customer, amount, currency, created_at) VALUES ('${ref.source}:4c', 'cus_1', 100, 'eur', 'x'); ROLLBACK`], []);
    const result = await commitDone(connections, ref, 100, { handled: true, effects: [twoInOne, payment(`${ref.source}:4d`)] }, NOW);
    expect(result).toMatchObject({ kind: "refused" });
    expect(result.kind === "refused" && (result.error as { code?: string }).code).toBe("42601");
    expect(await payments(`${ref.source}:4c`)).toBe(0);
    expect(await payments(`${ref.source}:4d`)).toBe(0);
    expect(await row(ref)).toMatchObject({ status: "received" });
  });

  it("commits nothing for a stale token: a newer takeover was recorded (the fence)", async () => {
    const ref = await received();
    await db((q) => claim(q, ref, 200, { previousToken: 100, maxAttempts: 5 }, NOW));
    const stale = await commitDone(connections, ref, 100, { handled: true, effects: [payment(`${ref.source}:5`)] }, NOW);
    expect(stale).toEqual({ kind: "lease_lost" });
    expect(await payments(`${ref.source}:5`)).toBe(0);
    expect(await row(ref)).toMatchObject({ status: "processing", attempts: 0, lease_token: "200", commit_token: null });
    // The takeover's own commit lands.
    expect(await commitDone(connections, ref, 200, { handled: true, effects: [payment(`${ref.source}:5`)] }, NOW)).toEqual({ kind: "committed" });
    expect(await payments(`${ref.source}:5`)).toBe(1);
  });

  it("answers committed to a second try of a commit that landed, and counts and writes nothing more", async () => {
    const ref = await received();
    const effects = [sql`INSERT INTO payments (delivery_id, amount, currency, created_at) VALUES (${`${ref.source}:6`}, ${1}, ${"eur"}, ${"x"})`];
    expect(await commitDone(connections, ref, 100, { handled: true, effects }, NOW)).toEqual({ kind: "committed" });
    expect(await commitDone(connections, ref, 100, { handled: true, effects }, NOW)).toEqual({ kind: "committed" });
    expect(await row(ref)).toMatchObject({ status: "done", attempts: 1 });
    expect(await history(ref)).toHaveLength(1);
    // Another token after the done mark: lost.
    expect(await commitDone(connections, ref, 300, { handled: true, effects: [] }, NOW)).toEqual({ kind: "lease_lost" });
  });

  it("throws when the database cannot be reached, an infrastructure error", async () => {
    const ref = await received();
    const unreachable = { connectionString: "postgres://postgres:pw@127.0.0.1:9/inbox" } as Hyperdrive;
    const error = await commitDone(clientPerOperation(unreachable), ref, 100, { handled: true, effects: [payment(`${ref.source}:10`)] }, NOW).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(Error);
    expect(isStatementError(error)).toBe(false);
    expect(await row(ref)).toMatchObject({ status: "received" });
  });

  it("answers lease_lost for a delivery that is not there, and commits its effects nowhere", async () => {
    const ref = { source: `pg-life-${crypto.randomUUID().slice(0, 8)}`, id: "gone" };
    expect(await commitDone(connections, ref, 100, { handled: true, effects: [payment(`${ref.source}:7`)] }, NOW)).toEqual({ kind: "lease_lost" });
    expect(await payments(`${ref.source}:7`)).toBe(0);
  });

  it("counts an unhandled delivery once, and a replay takes it back", async () => {
    const ref = await received();
    expect(await commitDone(connections, ref, 100, { handled: false, effects: [] }, NOW)).toEqual({ kind: "committed" });
    expect(await unhandledCount(ref.source)).toBe(1);
    expect(await history(ref)).toMatchObject([{ outcome: "unhandled" }]);
    // A second done mark is refused by the fence before the count's trigger.
    expect(await commitDone(connections, ref, 100, { handled: false, effects: [] }, NOW)).toEqual({ kind: "committed" });
    expect(await unhandledCount(ref.source)).toBe(1);
    const second = { source: ref.source, id: "evt_2" };
    await db((q) => insertDeliveries(q, [{ ...second, eventType: null, body: new Uint8Array(0), receivedAtMs: NOW }]));
    await commitDone(connections, second, 100, { handled: false, effects: [] }, NOW);
    expect(await unhandledCount(ref.source)).toBe(2);
    await db((q) => q.query("UPDATE deliveries SET status = 'received', handled = NULL WHERE source = $1 AND id = $2", [ref.source, ref.id]));
    expect(await unhandledCount(ref.source)).toBe(1);
  });
});

describe("result marks", () => {
  it("records a retryable failure once, counted, and refuses it to a stale token", async () => {
    const ref = await received();
    expect(await db((q) => recordResult(q, ref, 100, { kind: "retry", error: "HTTP 503" }, NOW, { startedAtMs: NOW - 10 }))).toBe(1);
    expect(await row(ref)).toMatchObject({ status: "received", attempts: 1, error: "HTTP 503", lease_token: "100" });
    // The same result again (a retried statement) changes nothing.
    expect(await db((q) => recordResult(q, ref, 100, { kind: "retry", error: "HTTP 503" }, NOW))).toBe(0);
    // An older token than the last recorded: refused.
    expect(await db((q) => recordResult(q, ref, 90, { kind: "retry", error: "late" }, NOW))).toBe(0);
    expect(await row(ref)).toMatchObject({ attempts: 1, error: "HTTP 503" });
    // The next run's result lands.
    expect(await db((q) => recordResult(q, ref, 101, { kind: "retry", error: "HTTP 500" }, NOW))).toBe(1);
    expect(await row(ref)).toMatchObject({ attempts: 2, error: "HTTP 500" });
    expect((await history(ref)).map((entry) => [entry.attempt, entry.outcome, entry.error])).toEqual([
      [1, "retry", "HTTP 503"],
      [2, "retry", "HTTP 500"],
    ]);
  });

  it("sets a delivery aside as failed once, fenced, and nothing lands after it", async () => {
    const ref = await received();
    await db((q) => claim(q, ref, 200, { previousToken: 100, maxAttempts: 5 }, NOW));
    expect(await db((q) => recordResult(q, ref, 150, { kind: "failed", error: "stale worker" }, NOW))).toBe(0);
    expect(await db((q) => recordResult(q, ref, 200, { kind: "failed", error: "no amount" }, NOW))).toBe(1);
    expect(await db((q) => recordResult(q, ref, 200, { kind: "failed", error: "no amount" }, NOW))).toBe(0);
    expect(await row(ref)).toMatchObject({ status: "failed", attempts: 1, error: "no amount" });
    expect(await db((q) => recordResult(q, ref, 300, { kind: "retry", error: "later" }, NOW))).toBe(0);
    expect(await commitDone(connections, ref, 300, { handled: true, effects: [payment(`${ref.source}:8`)] }, NOW)).toEqual({ kind: "lease_lost" });
    expect(await payments(`${ref.source}:8`)).toBe(0);
  });

  it("records a deferral uncounted, one entry for deferrals in a row with the same reason", async () => {
    const ref = await received();
    // Each answers the deferrals in a row with its reason, 0 when the fence refused.
    expect(await db((q) => recordResult(q, ref, 100, { kind: "deferred", why: "deferred: busy" }, NOW + 10, { startedAtMs: NOW }))).toBe(1);
    expect(await db((q) => recordResult(q, ref, 101, { kind: "deferred", why: "deferred: busy" }, NOW + 2000, { startedAtMs: NOW + 1990 }))).toBe(2);
    expect(await db((q) => recordResult(q, ref, 102, { kind: "deferred", why: CUT_SHORT }, NOW + 3000))).toBe(1);
    expect(await db((q) => recordResult(q, ref, 102, { kind: "deferred", why: CUT_SHORT }, NOW + 4000))).toBe(0);
    expect(await row(ref)).toMatchObject({ status: "received", attempts: 0, lease_token: "102" });
    expect(await history(ref)).toEqual([
      { attempt: null, at: "2026-12-01T12:00:01.990Z", ms: 10, outcome: "deferred", error: "deferred: busy (not counted)", count: 2 },
      { attempt: null, at: null, ms: null, outcome: "deferred", error: "cut short: the consumer invocation's time ran out (not counted)" },
    ]);
  });

  it("keeps the last MAX_ATTEMPT_LOG entries", async () => {
    const ref = await received();
    for (let run = 1; run <= MAX_ATTEMPT_LOG + 2; run++) await db((q) => recordResult(q, ref, run, { kind: "retry", error: `failure ${run}` }, NOW));
    const entries = await history(ref);
    expect(entries).toHaveLength(MAX_ATTEMPT_LOG);
    expect(entries[0]).toMatchObject({ attempt: 3, error: "failure 3" });
    expect(entries.at(-1)).toMatchObject({ attempt: MAX_ATTEMPT_LOG + 2, error: `failure ${MAX_ATTEMPT_LOG + 2}` });
  });

  it("stores an error with a NUL character (Postgres text refuses NUL) with U+FFFD in its place", async () => {
    const ref = await received();
    expect(await db((q) => recordResult(q, ref, 100, { kind: "retry", error: "bad\u0000byte" }, NOW))).toBe(1);
    expect(await row(ref)).toMatchObject({ error: "bad\uFFFDbyte" });
    expect(await history(ref)).toMatchObject([{ error: "bad\uFFFDbyte" }]);
  });

  it("stores an error with half an emoji (jsonb refuses a lone surrogate) with U+FFFD in its place, and fails it the same way", async () => {
    const ref = await received();
    // What a message cut at a length can end with, or a handler can echo from an event's JSON ("\ud83d").
    expect(await db((q) => recordResult(q, ref, 100, { kind: "retry", error: "cut \ud83d" }, NOW))).toBe(1);
    expect(await row(ref)).toMatchObject({ error: "cut \uFFFD" });
    expect(await history(ref)).toMatchObject([{ error: "cut \uFFFD" }]);
    const other = await received();
    expect(await db((q) => recordResult(q, other, 100, { kind: "failed", error: "\udc00 alone" }, NOW))).toBe(1);
    expect(await row(other)).toMatchObject({ status: "failed", error: "\uFFFD alone" });
  });
});

describe("the order guard", () => {
  /** A handler run's guard and its effects, as the consumer builds them (processing/order-guard.ts). */
  function guardFor(ref: DeliveryRef) {
    const effects: SqlStatement[] = [];
    const guard = createOrderGuard({ entityVersion: (entity) => db((q) => entityVersion(q, entity)) }, ref, (statement) => effects.push(statement));
    return { guard, effects };
  }

  it("applies a newer version with the done mark, and skips an older one", async () => {
    const ref = await received();
    const entity = `${ref.source}:customer:cus_1`;
    const first = guardFor(ref);
    expect(await first.guard.isNewer(entity, 5)).toBe(true);
    expect(await commitDone(connections, ref, 100, { handled: true, effects: first.effects }, NOW)).toEqual({ kind: "committed" });
    expect(await db((q) => entityVersion(q, entity))).toBe(5);

    const older = await received();
    expect(await guardFor(older).guard.isNewer(entity, 4)).toBe(false);
    expect(await guardFor(older).guard.isNewer(entity, 5)).toBe(false);
    const newer = guardFor(older);
    expect(await newer.guard.isNewer(entity, 1_764_590_400_123)).toBe(true);
    expect(await commitDone(connections, older, 100, { handled: true, effects: newer.effects }, NOW)).toEqual({ kind: "committed" });
    expect(await db((q) => entityVersion(q, entity))).toBe(1_764_590_400_123);
  });

  it("refuses a commit whose version is no longer newer (forward_only): nothing of it commits", async () => {
    const entity = `pg-life-${crypto.randomUUID().slice(0, 8)}:customer`;
    const slow = await received();
    const fast = await received();
    // Both checked before either committed: both see no version.
    const slowRun = guardFor(slow);
    const fastRun = guardFor(fast);
    expect(await slowRun.guard.isNewer(entity, 10)).toBe(true);
    expect(await fastRun.guard.isNewer(entity, 20)).toBe(true);
    expect(await commitDone(connections, fast, 100, { handled: true, effects: fastRun.effects }, NOW)).toEqual({ kind: "committed" });

    const result = await commitDone(connections, slow, 100, { handled: true, effects: [payment(`${slow.source}:9`), ...slowRun.effects] }, NOW);
    expect(result).toMatchObject({ kind: "refused", permanent: false });
    expect(result.kind === "refused" && isRaised(result.error, "stale_version")).toBe(true);
    expect(await payments(`${slow.source}:9`)).toBe(0);
    expect(await row(slow)).toMatchObject({ status: "received", attempts: 0 });
    expect(await db((q) => entityVersion(q, entity))).toBe(20);
    // Its retry learns it is stale.
    expect(await guardFor(slow).guard.isNewer(entity, 10)).toBe(false);
  });
});

describe("isStatementError", () => {
  const databaseError = (code: string) => Object.assign(new DatabaseError("injected", 0, "error"), { code });

  it("blames the statement for data, constraint, syntax and trigger errors", () => {
    for (const code of ["22P02", "22021", "23505", "23503", "42P01", "42601", "42501", "P0001", "0A000", "2F005", "40002"]) {
      expect([code, isStatementError(databaseError(code))]).toEqual([code, true]);
    }
  });

  it("blames the infrastructure for connection, serialization, resource and shutdown errors, and for errors without a SQLSTATE", () => {
    for (const code of ["08006", "08001", "40001", "40P01", "53300", "57P01", "57014", "55P03", "25006", "XX000", "58030"]) {
      expect([code, isStatementError(databaseError(code))]).toEqual([code, false]);
    }
    expect(isStatementError(new Error("Connection terminated unexpectedly"))).toBe(false);
    expect(isStatementError(Object.assign(new Error("read ECONNRESET"), { code: "ECONNRESET" }))).toBe(false);
  });
});

describe("postgresStore", () => {
  it("takes a delivery from its record to done through the Store interface, and fences a stale worker", async () => {
    const store = postgresStore(hyperdrive);
    const background: Promise<unknown>[] = [];
    const ref = { source: `pg-life-${crypto.randomUUID().slice(0, 8)}`, id: "evt_store" };
    const delivery = { ...ref, eventType: "payment_intent.succeeded", body: new TextEncoder().encode(BODY), receivedAtMs: NOW };
    expect(await store.record(delivery, { waitUntil: (promise) => void background.push(promise) })).toBe("stored");
    expect(await store.claim(ref, 100, null, NOW)).toMatchObject({ kind: "run", attempt: 1 });
    expect(await store.claim(ref, 200, { previousToken: 100, maxAttempts: 5 }, NOW)).toMatchObject({ kind: "run", attempt: 1 });
    expect(await store.commitDone(ref, 100, { handled: true, effects: [payment(`${ref.source}:store`)] }, NOW)).toEqual({ kind: "lease_lost" });
    expect(await store.commitDone(ref, 200, { handled: true, effects: [payment(`${ref.source}:store`)] }, NOW)).toEqual({ kind: "committed" });
    expect(await store.get(ref)).toMatchObject({ status: "done", attempts: 1 });
    expect(await payments(`${ref.source}:store`)).toBe(1);
    await Promise.allSettled(background);
  });
});
