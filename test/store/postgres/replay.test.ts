/**
 * The replay reset of the Postgres store (src/store/postgres/replay.ts) on a real Postgres: what it
 * resets and what it refuses, the fence it raises, the attempt history it appends to, the bulk form's
 * filters and order; and, since Postgres runs them at the same moment, two replays at once. What the
 * D1 store's tests check through the admin API (test/http/admin/replay.test.ts) and the store
 * (test/store/dashboard-data.test.ts). Each test has sources of its own: the database is shared.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { MAX_ATTEMPT_LOG } from "../../../src/store/attempts";
import { withClient } from "../../../src/store/postgres/client";
import type { Queryable } from "../../../src/store/postgres/queryable";
import { countFailed, replayState, resetFailedForReplay, resetForReplay } from "../../../src/store/postgres/replay";

const NOW = Date.parse("2026-12-02T00:00:00.000Z");
const iso = (ms: number) => new Date(ms).toISOString();
const db = <T>(fn: (q: Queryable) => Promise<T>) => withClient(env.HYPERDRIVE!, fn);

interface Seed {
  status?: "received" | "processing" | "done" | "failed";
  receivedAtMs?: number;
  eventType?: string;
  leaseToken?: number | null;
  body?: Uint8Array | null;
  handled?: boolean | null;
}

async function seed(source: string, id: string, options: Seed = {}): Promise<void> {
  const status = options.status ?? "failed";
  await db((q) =>
    q.query(
      `INSERT INTO deliveries (source, id, event_type, status, attempts, error, handled, body, received_at, updated_at, lease_token, attempt_log)
       VALUES ($1, $2, $3, $4, 2, $5, $6, $7, $8, $8, $9, '[{"attempt": 2, "at": null, "ms": 5, "outcome": "failed", "error": "boom"}]')`,
      [
        source,
        id,
        options.eventType ?? "test.event",
        status,
        status === "failed" ? "boom" : null,
        options.handled ?? (status === "done" ? true : null),
        options.body === undefined ? new Uint8Array([123, 125]) : options.body,
        iso(options.receivedAtMs ?? NOW - 60_000),
        options.leaseToken === undefined ? NOW - 30_000 : options.leaseToken,
      ],
    ),
  );
}

async function rowOf(source: string, id: string) {
  return db(async (q) => {
    const { rows } = await q.query<{ status: string; attempts: number; error: string | null; handled: boolean | null; updated_at: string; lease_token: string | null; attempt_log: { outcome: string; attempt: number | null; at: string | null }[] }>(
      "SELECT status, attempts, error, handled, updated_at, lease_token, attempt_log FROM deliveries WHERE source = $1 AND id = $2",
      [source, id],
    );
    return rows[0]!;
  });
}

const reset = (source: string, id: string, from: ("failed" | "done")[], nowMs = NOW) => db((q) => resetForReplay(q, { source, id }, from, nowMs)).then((again) => again !== null);

describe("resetForReplay", () => {
  it("puts a failed delivery back to received with a new life: attempts 0, no error, the fence at the replay's time, a replayed entry", async () => {
    await seed("pg-replay", "failed");
    expect(await reset("pg-replay", "failed", ["failed"])).toBe(true);
    const row = await rowOf("pg-replay", "failed");
    expect(row).toMatchObject({ status: "received", attempts: 0, error: null, handled: null, updated_at: iso(NOW), lease_token: String(NOW) });
    expect(row.attempt_log).toEqual([
      { attempt: 2, at: null, ms: 5, outcome: "failed", error: "boom" },
      { attempt: null, at: iso(NOW), ms: null, outcome: "replayed", error: null },
    ]);
  });

  it("keeps a lease token above the replay's time (a lease object's clock ahead of this one), and sets one where none was", async () => {
    await seed("pg-replay-fence", "ahead", { leaseToken: NOW + 5_000 });
    await seed("pg-replay-fence", "none", { leaseToken: null });
    expect(await reset("pg-replay-fence", "ahead", ["failed"])).toBe(true);
    expect(await reset("pg-replay-fence", "none", ["failed"])).toBe(true);
    expect((await rowOf("pg-replay-fence", "ahead")).lease_token).toBe(String(NOW + 5_000));
    expect((await rowOf("pg-replay-fence", "none")).lease_token).toBe(String(NOW));
  });

  it("fences the previous life: a worker claimed before the replay can no longer commit its done mark", async () => {
    await seed("pg-replay-fenced", "stale", { leaseToken: null });
    expect(await reset("pg-replay-fenced", "stale", ["failed"])).toBe(true);
    // A claim the database never saw, handed out before the replay (its token from an earlier clock).
    const stale = db((q) => q.query("UPDATE deliveries SET status = 'done', commit_token = $3, lease_token = $3 WHERE source = $1 AND id = $2", ["pg-replay-fenced", "stale", NOW - 1_000]));
    await expect(stale).rejects.toThrow("lease_lost");
    // The next life's claim, after the replay, commits.
    await db((q) => q.query("UPDATE deliveries SET status = 'done', commit_token = $3, lease_token = $3 WHERE source = $1 AND id = $2", ["pg-replay-fenced", "stale", NOW + 1]));
    expect((await rowOf("pg-replay-fenced", "stale")).status).toBe("done");
  });

  it("refuses a delivery in flight, a done one unless asked, one whose body retention cleared, and an unknown one; replayState says which", async () => {
    await seed("pg-replay-refused", "received", { status: "received" });
    await seed("pg-replay-refused", "processing", { status: "processing" });
    await seed("pg-replay-refused", "done", { status: "done" });
    await seed("pg-replay-refused", "pruned", { status: "done", body: null });
    for (const id of ["received", "processing", "done", "pruned", "unknown"]) expect(await reset("pg-replay-refused", id, ["failed"]), id).toBe(false);
    expect(await reset("pg-replay-refused", "pruned", ["failed", "done"])).toBe(false);
    const state = (id: string) => db((q) => replayState(q, { source: "pg-replay-refused", id }));
    expect(await state("processing")).toEqual({ status: "processing", bodyPruned: false });
    expect(await state("pruned")).toEqual({ status: "done", bodyPruned: true });
    expect(await state("unknown")).toBeNull();
    expect(await reset("pg-replay-refused", "done", ["failed", "done"])).toBe(true);
    expect(await state("done")).toEqual({ status: "received", bodyPruned: false });
  });

  it("resets a delivery once when two replays of it run at the same moment", async () => {
    await seed("pg-replay-twice", "one");
    const results = await Promise.all(Array.from({ length: 5 }, () => reset("pg-replay-twice", "one", ["failed", "done"])));
    expect(results.filter(Boolean)).toHaveLength(1);
    expect((await rowOf("pg-replay-twice", "one")).attempt_log.filter((entry) => entry.outcome === "replayed")).toHaveLength(1);
  });

  it(`keeps the last ${MAX_ATTEMPT_LOG} entries of the history`, async () => {
    await seed("pg-replay-long", "one", { status: "done" });
    await db(async (q) => {
      for (let round = 0; round < MAX_ATTEMPT_LOG + 5; round++) {
        await q.query("UPDATE deliveries SET status = 'done', handled = true WHERE source = 'pg-replay-long'");
        expect(await resetForReplay(q, { source: "pg-replay-long", id: "one" }, ["done"], NOW + round)).not.toBeNull();
      }
    });
    const log = (await rowOf("pg-replay-long", "one")).attempt_log;
    expect(log).toHaveLength(MAX_ATTEMPT_LOG);
    expect(log[0]!.at).toBe(iso(NOW + 5));
    expect(log.at(-1)!.at).toBe(iso(NOW + MAX_ATTEMPT_LOG + 4));
  });
});

describe("resetFailedForReplay and countFailed", () => {
  it("take the failed deliveries of the filter, oldest first, up to the limit, skipping one without a body, until none remain", async () => {
    const source = "pg-bulk";
    for (let index = 0; index < 5; index++) await seed(source, `f${index}`, { receivedAtMs: NOW - 50_000 + index });
    await seed(source, "bodiless", { receivedAtMs: NOW - 60_000, body: null });
    await seed(source, "done", { status: "done", receivedAtMs: NOW - 70_000 });
    await seed(`${source}-other`, "f", { receivedAtMs: NOW - 80_000 });
    expect(await db((q) => countFailed(q, { source }))).toBe(5);
    const first = await db((q) => resetFailedForReplay(q, { source }, 2, NOW));
    expect(first).toEqual([
      { source, id: "f0" },
      { source, id: "f1" },
    ]);
    expect(await db((q) => countFailed(q, { source }))).toBe(3);
    expect((await db((q) => resetFailedForReplay(q, { source }, 10, NOW))).map((ref) => ref.id)).toEqual(["f2", "f3", "f4"]);
    expect(await db((q) => countFailed(q, { source }))).toBe(0);
    expect(await db((q) => resetFailedForReplay(q, { source }, 10, NOW))).toEqual([]);
    expect((await rowOf(source, "bodiless")).status).toBe("failed");
    expect((await rowOf(`${source}-other`, "f")).status).toBe("failed");
    expect((await rowOf(source, "f4")).attempt_log.at(-1)).toMatchObject({ outcome: "replayed", at: iso(NOW) });
  });

  it("narrow by event type and a received time range", async () => {
    const source = "pg-bulk-filter";
    await seed(source, "a", { eventType: "invoice.paid", receivedAtMs: NOW - 30_000 });
    await seed(source, "b", { eventType: "invoice.paid", receivedAtMs: NOW - 20_000 });
    await seed(source, "c", { eventType: "charge.failed", receivedAtMs: NOW - 10_000 });
    expect(await db((q) => countFailed(q, { source, eventType: "invoice.paid" }))).toBe(2);
    const refs = await db((q) => resetFailedForReplay(q, { source, since: iso(NOW - 20_000), until: iso(NOW) }, 10, NOW));
    expect(refs.map((ref) => ref.id)).toEqual(["b", "c"]);
    expect((await db((q) => resetFailedForReplay(q, { source, eventType: "invoice.paid" }, 10, NOW))).map((ref) => ref.id)).toEqual(["a"]);
  });

  it("give two bulk replays at the same moment disjoint deliveries, each reset once", async () => {
    const source = "pg-bulk-race";
    for (let index = 0; index < 30; index++) await seed(source, `r${String(index).padStart(2, "0")}`, { receivedAtMs: NOW - 100_000 + index });
    const rounds = await Promise.all([0, 1, 2].map(() => db((q) => resetFailedForReplay(q, { source }, 20, NOW))));
    const ids = rounds.flat().map((ref) => ref.id);
    expect(ids).toHaveLength(30);
    expect(new Set(ids).size).toBe(30);
  });

  it("leave a failed delivery another transaction holds for the next round, without waiting for it", async () => {
    const source = "pg-bulk-locked";
    await seed(source, "held", { receivedAtMs: NOW - 20_000 });
    await seed(source, "free", { receivedAtMs: NOW - 10_000 });
    await db(async (holder) => {
      await holder.query("BEGIN");
      try {
        await holder.query("SELECT 1 FROM deliveries WHERE source = $1 AND id = 'held' FOR UPDATE", [source]);
        expect((await db((q) => resetFailedForReplay(q, { source }, 10, NOW))).map((ref) => ref.id)).toEqual(["free"]);
        expect(await db((q) => countFailed(q, { source }))).toBe(1);
      } finally {
        await holder.query("ROLLBACK");
      }
    });
    expect((await db((q) => resetFailedForReplay(q, { source }, 10, NOW))).map((ref) => ref.id)).toEqual(["held"]);
  });
});
