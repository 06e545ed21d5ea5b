/**
 * The clients a queue batch or a sweep shares on Postgres (src/store/postgres/client.ts
 * `sharedClients`, src/store/index.ts `openBatchStore`): one connection serves operation after
 * operation, at most `max` at once, a client that failed for anything but its statement is not
 * handed on, and `close()` ends them all. The consumer's batch holds at most BATCH_CONNECTIONS,
 * however many deliveries it claims and commits, and none stays open after it.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { defineHandlers } from "../../../src/handler-api";
import { BATCH_CONNECTIONS } from "../../../src/store";
import { sharedClients, toNumber, withClient } from "../../../src/store/postgres/client";
import { consume, createEffectTables, storeDelivery } from "../../helpers/processing";
import { count } from "../../helpers/store-db";
import { faultyHyperdrive } from "../../helpers/store-faults";
import { sql } from "../../../src/sql";

const hyperdrive = env.HYPERDRIVE!;

/** The server process behind a client: one per connection, locally (no Hyperdrive pooler in between). */
const backendPid = async (db: { query: (text: string) => Promise<{ rows: { pid: number }[] }> }) => (await db.query("SELECT pg_backend_pid() AS pid")).rows[0]!.pid;

/** The server's connections whose application_name is `name`, asked on a connection of its own. */
const connectionsNamed = (name: string) =>
  withClient(hyperdrive, async (db) => toNumber((await db.query("SELECT count(*) AS n FROM pg_stat_activity WHERE application_name = $1", [name])).rows[0].n));

/** A connection ends on the server a moment after its client sends Terminate: asks until none is left, a bounded number of times. */
async function untilNoneNamed(name: string): Promise<number> {
  let open = await connectionsNamed(name);
  for (let tries = 0; open > 0 && tries < 50; tries++) {
    await new Promise((resolve) => setTimeout(resolve, 20));
    open = await connectionsNamed(name);
  }
  return open;
}

/** A binding to the same database whose clients carry `application_name` (and count their connects), faulting nothing. */
const countedBinding = () => faultyHyperdrive(hyperdrive, () => undefined);
const nameOf = (binding: Hyperdrive) => new URL(binding.connectionString).searchParams.get("application_name")!;

describe("shared clients", () => {
  it("run operation after operation on one connection, and close() ends it", async () => {
    const counted = countedBinding();
    const clients = sharedClients(counted.hyperdrive, 4);
    const pids = [];
    for (let i = 0; i < 5; i++) pids.push(await clients.run(backendPid));
    expect(new Set(pids).size).toBe(1);
    expect(counted.calls.filter((call) => call.method === "connect")).toHaveLength(1);
    expect(await connectionsNamed(nameOf(counted.hyperdrive))).toBe(1);
    await clients.close();
    expect(await untilNoneNamed(nameOf(counted.hyperdrive))).toBe(0);
    // An operation after close() still runs, on a client of its own that it ends: no pool is left open.
    expect(await clients.run(backendPid)).not.toBe(pids[0]);
    expect(await untilNoneNamed(nameOf(counted.hyperdrive))).toBe(0);
  });

  it("hold at most `max` connections however many operations run at once", async () => {
    const counted = countedBinding();
    const clients = sharedClients(counted.hyperdrive, 3);
    try {
      const pids = await Promise.all(
        Array.from({ length: 12 }, () => clients.run(async (db) => (await db.query("SELECT pg_backend_pid() AS pid, pg_sleep(0.02)")).rows[0].pid as number)),
      );
      expect(pids).toHaveLength(12);
      expect(new Set(pids).size).toBeLessThanOrEqual(3);
      expect(counted.calls.filter((call) => call.method === "connect").length).toBeLessThanOrEqual(3);
    } finally {
      await clients.close();
    }
  });

  it("keep a client the database refused a statement on, and end one that failed otherwise", async () => {
    const clients = sharedClients(hyperdrive, 1);
    try {
      const first = await clients.run(backendPid);
      // Division by zero, SQLSTATE 22012: the statement's fault; the connection is sound.
      await expect(clients.run((db) => db.query("SELECT 1 / 0"))).rejects.toThrow(/division by zero/);
      expect(await clients.run(backendPid)).toBe(first);
      // Anything else (here a bug thrown mid-operation) may have left the client in any state: it is ended.
      await expect(
        clients.run(async (db) => {
          await db.query("BEGIN");
          throw new Error("a bug in the middle of a transaction");
        }),
      ).rejects.toThrow(/a bug/);
      const second = await clients.run(backendPid);
      expect(second).not.toBe(first);
      // The new client is not inside the abandoned transaction.
      expect((await clients.run((db) => db.query("SELECT now() = statement_timestamp() AS fresh"))).rows[0].fresh).toBe(true);
    } finally {
      await clients.close();
    }
  });

  it("fail an operation whose server connection was cut, and serve the next on a new one", async () => {
    const clients = sharedClients(hyperdrive, 1);
    try {
      const first = await clients.run(backendPid);
      await withClient(hyperdrive, (db) => db.query("SELECT pg_terminate_backend($1)", [first]));
      // The idle client's loss is either noticed before the next operation (the pool drops it) or
      // met by it (an infrastructure error, after which the client is ended); either way the one after runs.
      const next = await clients.run(backendPid).catch(() => clients.run(backendPid));
      expect(next).not.toBe(first);
    } finally {
      await clients.close();
    }
  });
});

describe("a consumer batch on Postgres", () => {
  it(`claims and commits 40 deliveries on at most ${BATCH_CONNECTIONS} connections, and leaves none open`, async () => {
    await createEffectTables();
    const refs = Array.from({ length: 40 }, (_, index) => ({ source: "pooled", id: `pooled-${index}` }));
    for (const ref of refs) await storeDelivery(ref);
    const counted = countedBinding();
    const handlers = defineHandlers({ pooled: { "*": (_event, ctx) => [ctx.sql`INSERT INTO keyed_effects (delivery_id, note) VALUES (${ctx.deliveryId}, 'pooled') ON CONFLICT DO NOTHING`] } });
    const { outcomes } = await consume(refs, handlers, { HYPERDRIVE: counted.hyperdrive });
    expect(outcomes.map((outcome) => outcome.reason)).toEqual(refs.map(() => "done"));
    expect(await count(sql`SELECT count(*) AS n FROM keyed_effects WHERE delivery_id LIKE 'pooled-%'`)).toBe(40);
    // Two operations each (a claim, a commit) would have been 80 connects, one per operation.
    const connects = counted.calls.filter((call) => call.method === "connect").length;
    expect(connects).toBeGreaterThan(0);
    expect(connects).toBeLessThanOrEqual(BATCH_CONNECTIONS);
    expect(await untilNoneNamed(nameOf(counted.hyperdrive))).toBe(0);
  });
});
