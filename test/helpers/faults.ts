/**
 * Fault injection for the Workers-runtime tests: wrappers around the real D1, Durable Object and
 * queue bindings that fail on chosen calls, so that the real consumer, lease objects and D1 are
 * driven through each failure.
 *
 * A fault is decided per call by a plan: `(call) => Fault | undefined`, where `call` says which
 * binding method runs, its SQL (for D1) and a running count of calls. The faults:
 * - "throw": fail before anything happens (D1 unreachable, the object overloaded);
 * - "commit-then-throw": do the real work, then report an error (a lost response);
 * - "hang": wait for `release()` of the returned controls before doing the real work, as a
 *   stalled call does (the caller sees nothing until then);
 * - an Error: thrown instead of the call (to shape it like one of D1's own).
 */
import { runInDurableObject } from "cloudflare:test";
import { runsOf } from "./recording-producer";

export type Fault = "throw" | "commit-then-throw" | "hang";

export interface Call {
  /** `batch`, `run`, `first`, `all`, `raw`; a stub method (`claim`, `settle`, …); `send`, `sendBatch`. */
  readonly method: string;
  /** D1 only: the SQL of each statement. */
  readonly sql: readonly string[];
  /** 1 for the first call through this wrapper, 2 for the next, … */
  readonly n: number;
}

/** What to do with a call: a fault, an error to throw instead of running it, or nothing (run it). */
export type Plan = (call: Call) => Fault | Error | undefined;

/** An error shaped like D1's own for a lost connection: not a statement error (no SQLITE_ code). */
export function infrastructureError(what = "D1"): Error {
  return new Error(`${what}_ERROR: Network connection lost. (injected)`);
}

/** Counts calls and hands out the stalls to release. */
export interface FaultControls {
  /** Calls made through the wrapper so far. */
  readonly calls: Call[];
  /** Calls that faulted, by fault. */
  readonly faulted: { call: Call; fault: Fault | Error }[];
  /** Lets every stalled call go on (they then run for real). */
  release(): void;
}

function controls(): FaultControls & { apply<T>(call: Call, fault: Fault | Error | undefined, real: () => Promise<T>, what: string): Promise<T> } {
  const calls: Call[] = [];
  const faulted: { call: Call; fault: Fault | Error }[] = [];
  let released!: () => void;
  const stalls = new Promise<void>((resolve) => (released = resolve));
  return {
    calls,
    faulted,
    release: () => released(),
    async apply(call, fault, real, what) {
      calls.push(call);
      if (fault) faulted.push({ call, fault });
      if (fault instanceof Error) throw fault;
      if (fault === "throw") throw infrastructureError(what);
      if (fault === "hang") {
        await stalls;
        return real();
      }
      const result = await real();
      if (fault === "commit-then-throw") throw infrastructureError(what);
      return result;
    },
  };
}

/**
 * A D1 binding that runs every statement on `db` unless `plan` says otherwise.
 * @example
 * const faulty = faultyD1(env.DB, (call) => (call.method === "batch" && call.sql.some((sql) => sql.includes("'done'")) ? "commit-then-throw" : undefined));
 * await consume([ref], handlers, { DB: faulty.db });
 */
export function faultyD1(db: D1Database, plan: Plan): FaultControls & { db: D1Database } {
  const control = controls();
  let n = 0;
  const wrapStatement = (statement: D1PreparedStatement, sql: string): D1PreparedStatement => {
    for (const method of ["run", "first", "all", "raw"] as const) {
      const real = (statement[method] as (...args: unknown[]) => Promise<unknown>).bind(statement);
      (statement as unknown as Record<string, unknown>)[method] = (...args: unknown[]) => {
        const call = { method, sql: [sql], n: ++n };
        return control.apply(call, plan(call), () => real(...args), "D1");
      };
    }
    const bind = statement.bind.bind(statement);
    statement.bind = (...values: unknown[]) => wrapStatement(bind(...values), sql);
    sqlOf.set(statement, sql);
    return statement;
  };
  const wrapped = {
    prepare: (sql: string) => wrapStatement(db.prepare(sql), sql),
    batch: (statements: D1PreparedStatement[]) => {
      const call = { method: "batch", sql: statements.map((statement) => sqlOf.get(statement) ?? "?"), n: ++n };
      return control.apply(call, plan(call), () => db.batch(statements), "D1");
    },
    exec: (sql: string) => db.exec(sql),
    withSession: () => wrapped,
    dump: () => db.dump(),
  };
  return { ...control, db: wrapped as unknown as D1Database };
}

const sqlOf = new WeakMap<D1PreparedStatement, string>();

/**
 * A Durable Object namespace whose stubs forward every call to the real object unless `plan`
 * says otherwise (`call.method` is the RPC method's name).
 */
export function faultyNamespace<T extends Rpc.DurableObjectBranded>(
  namespace: DurableObjectNamespace<T>,
  plan: Plan,
): FaultControls & { namespace: DurableObjectNamespace<T> } {
  const control = controls();
  let n = 0;
  const wrapped = {
    idFromName: (name: string) => namespace.idFromName(name),
    idFromString: (id: string) => namespace.idFromString(id),
    newUniqueId: () => namespace.newUniqueId(),
    get(id: DurableObjectId) {
      const stub = namespace.get(id) as unknown as Record<string, (...args: unknown[]) => Promise<unknown>>;
      return new Proxy(stub, {
        get(target, property) {
          const value = target[property as string];
          if (typeof property !== "string" || typeof value !== "function" || property === "fetch") return value;
          return (...args: unknown[]) => {
            const call = { method: property, sql: [], n: ++n };
            return control.apply(call, plan(call), () => target[property]!(...args), "DurableObject");
          };
        },
      });
    },
  };
  return { ...control, namespace: wrapped as unknown as DurableObjectNamespace<T> };
}

/** A queue producer that records what it is asked to send (and, if `forward`, sends it on), failing as `plan` says. */
export function faultyQueue(queue: Queue | null, plan: Plan = () => undefined): FaultControls & { queue: Queue; sent: unknown[]; delays: (number | undefined)[] } {
  const control = controls();
  const sent: unknown[] = [];
  const delays: (number | undefined)[] = [];
  let n = 0;
  const producer = {
    send(body: unknown, options?: QueueSendOptions) {
      const call = { method: "send", sql: [], n: ++n };
      return control.apply(call, plan(call), async () => {
        for (const run of runsOf(body)) {
          sent.push(run);
          delays.push(options?.delaySeconds);
        }
        if (queue) await queue.send(body, options);
      }, "Queue");
    },
    sendBatch(messages: Iterable<MessageSendRequest>, options?: QueueSendBatchOptions) {
      const list = [...messages];
      const call = { method: "sendBatch", sql: [], n: ++n };
      return control.apply(call, plan(call), async () => {
        for (const message of list) {
          for (const run of runsOf(message.body)) {
            sent.push(run);
            delays.push(message.delaySeconds ?? options?.delaySeconds);
          }
        }
        if (queue) await queue.sendBatch(list, options);
      }, "Queue");
    },
  };
  return { ...control, queue: producer as unknown as Queue, sent, delays };
}

/**
 * Gives a Durable Object instance other bindings from now on (e.g. a recording queue), for the
 * calls and alarms it runs while it stays in memory. `this.env` is an ordinary property.
 */
export async function rebindObject<T extends Rpc.DurableObjectBranded>(stub: DurableObjectStub<T>, bindings: Partial<Env>): Promise<void> {
  await runInDurableObject(stub, (instance) => {
    const object = instance as unknown as { env: Env };
    object.env = { ...object.env, ...bindings };
  });
}
