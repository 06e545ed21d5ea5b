/**
 * Faults in whichever store runs (test/helpers/store-db.ts `storeName`), for the tests that run on
 * both: the same plans as test/helpers/faults.ts (`(call) => Fault | Error | undefined`), applied to
 * D1 by `faultyD1`, and to Postgres by `faultyHyperdrive` below, at the pg driver, on the
 * connections of one binding only.
 *
 * In Postgres a call is one statement a store sends (its SQL in `call.sql`, `method` "query"); the
 * transaction control around them (BEGIN, COMMIT, ROLLBACK) is not shown to the plan, as D1's batch
 * is one call, and a connect is recorded in `calls` (`method` "connect", `n` 0, and in `faulted`
 * when it failed) but not planned. So the faults mean the same in both:
 * - "throw": the statement fails before it runs, with an error that carries no SQLSTATE (a lost
 *   connection: infrastructure); a transaction it is in is rolled back;
 * - "commit-then-throw": the statement runs, and so does the COMMIT of its transaction (if it is in
 *   one), then its caller gets a lost connection's error: the work landed, the answer did not;
 * - "hang": the statement waits for `release()`, then runs;
 * - an Error: thrown instead of the statement (shape it as the database would: `pgError`).
 * `unreachableStore` is a store that cannot be reached at all: in Postgres a binding whose connection
 * string names a closed port, so every connect fails for real.
 */
import { env } from "cloudflare:workers";
import { Client, DatabaseError } from "pg";
import { faultyD1, type Call, type Fault, type FaultControls, type Plan } from "./faults";
import { storeName } from "./store-db";

/** The error of a connection lost under a statement, as pg reports it (no SQLSTATE). */
export function connectionLost(): Error {
  return new Error("Connection terminated unexpectedly (injected)");
}

/** An error the Postgres server sent, with its SQLSTATE `code` (e.g. 55P03, lock not available). */
export function pgError(code: string, message: string): DatabaseError {
  const error = new DatabaseError(`${message} (injected)`, 0, "error");
  error.code = code;
  return error;
}

/** What the patched driver asks of a faulty binding, for one of its clients. */
interface FaultyBinding {
  connect(real: () => Promise<void>): Promise<void>;
  query(client: Client, text: string, real: () => Promise<unknown>): Promise<unknown>;
}

/** The faulty bindings, by the application_name their connection strings give their clients. */
const bindings = new Map<string, FaultyBinding>();
let counter = 0;
let patched = false;

/**
 * Routes the statements and connects of the clients of a faulty binding through it; every other
 * client (the store on the real binding, store-db.ts) goes straight to the driver.
 */
function patchDriver(): void {
  if (patched) return;
  patched = true;
  const prototype = Client.prototype as unknown as {
    connect: (...args: unknown[]) => Promise<void> | undefined;
    query: (...args: unknown[]) => Promise<unknown>;
  };
  const connect = prototype.connect;
  const query = prototype.query;
  const bindingOf = (client: Client) => bindings.get((client as unknown as { connectionParameters: { application_name?: string } }).connectionParameters.application_name ?? "");
  prototype.connect = function (this: Client, ...args: unknown[]) {
    const binding = bindingOf(this);
    if (!binding) return connect.apply(this, args);
    if (args.length === 0) return binding.connect(() => connect.apply(this, args) as Promise<void>);
    // pg's Pool connects its clients with a callback (the store's shared clients, client.ts).
    const [callback] = args;
    if (args.length === 1 && typeof callback === "function") {
      binding.connect(() => connect.apply(this, []) as Promise<void>).then(
        () => callback(),
        (error: unknown) => callback(error),
      );
      return undefined;
    }
    return connect.apply(this, args);
  };
  prototype.query = function (this: Client, ...args: unknown[]) {
    const binding = bindingOf(this);
    // The stores' forms only, answered by a promise: query(text, values?), and query({ text, … }) for a handler's effects.
    const [first] = args;
    const text = typeof first === "string" ? first : typeof (first as { text?: unknown } | null)?.text === "string" ? (first as { text: string }).text : null;
    if (!binding || text === null || typeof args[args.length - 1] === "function") return query.apply(this, args);
    return binding.query(this, text, () => query.apply(this, args));
  };
}

const TRANSACTION_CONTROL = /^\s*(BEGIN|COMMIT|ROLLBACK)\b/i;

/**
 * A Hyperdrive binding to the same database as `hyperdrive` whose statements fail as `plan` says.
 * `connectionString`, when given, is the binding's instead (e.g. a closed port's).
 * @example
 * const lostAck = faultyHyperdrive(env.HYPERDRIVE!, (call) => (call.sql.some((text) => text.includes("SET status = 'done'")) ? "commit-then-throw" : undefined));
 * await consume([ref], handlers, { HYPERDRIVE: lostAck.hyperdrive });
 */
export function faultyHyperdrive(hyperdrive: Hyperdrive, plan: Plan, connectionString = hyperdrive.connectionString): FaultControls & { hyperdrive: Hyperdrive } {
  patchDriver();
  const name = `faulty-${++counter}`;
  const calls: Call[] = [];
  const faulted: { call: Call; fault: Fault | Error }[] = [];
  let released!: () => void;
  const stalls = new Promise<void>((resolve) => (released = resolve));
  /** Clients whose open transaction must commit, then report a lost connection. */
  const lostCommits = new WeakSet<Client>();
  let n = 0;
  bindings.set(name, {
    async connect(real) {
      calls.push({ method: "connect", sql: [], n: 0 });
      try {
        await real();
      } catch (error) {
        faulted.push({ call: { method: "connect", sql: [], n: 0 }, fault: "throw" });
        throw error;
      }
    },
    async query(client, text, real) {
      if (TRANSACTION_CONTROL.test(text)) {
        const lost = /^\s*COMMIT\b/i.test(text) && lostCommits.has(client);
        if (/^\s*(COMMIT|ROLLBACK)\b/i.test(text)) lostCommits.delete(client);
        const result = await real();
        if (lost) throw connectionLost();
        return result;
      }
      const call = { method: "query", sql: [text], n: ++n };
      calls.push(call);
      const fault = plan(call);
      if (fault) faulted.push({ call, fault });
      if (fault instanceof Error) throw fault;
      if (fault === "throw") throw connectionLost();
      if (fault === "hang") await stalls;
      if (fault !== "commit-then-throw") return real();
      // pg's view of the session from the server's last answer: "T" inside a transaction block.
      const inTransaction = (client as unknown as { getTransactionStatus(): string | null }).getTransactionStatus() === "T";
      const result = await real();
      // In a transaction, the loss comes after its COMMIT; on its own, the statement has landed.
      if (inTransaction) lostCommits.add(client);
      else throw connectionLost();
      return result;
    },
  });
  const url = new URL(connectionString);
  url.searchParams.set("application_name", name);
  return { calls, faulted, release: () => released(), hyperdrive: { connectionString: url.toString() } as Hyperdrive };
}

/**
 * The store's bindings with faults as `plan` says, to pass as the consumer's or the app's env
 * overrides: `{ DB }` on D1, `{ HYPERDRIVE }` on Postgres.
 * @example
 * const lostAck = faultyStore((call) => (call.sql.some((text) => text.includes("SET status = 'done'")) ? "commit-then-throw" : undefined));
 * await consume([ref], handlers, lostAck.bindings);
 */
export function faultyStore(plan: Plan): FaultControls & { bindings: Partial<Env> } {
  if (storeName === "d1") {
    const faulty = faultyD1(env.DB, plan);
    return { ...faulty, bindings: { DB: faulty.db } };
  }
  const faulty = faultyHyperdrive(env.HYPERDRIVE!, plan);
  return { ...faulty, bindings: { HYPERDRIVE: faulty.hyperdrive } };
}

/** Nothing listens here: a connect to it is refused at once. */
const CLOSED_PORT = 9;

/**
 * A store that cannot be reached: on D1 every call throws a lost connection's error; on Postgres the
 * binding names a closed port, so every connect is refused. `faulted` records each call or connect
 * that failed.
 */
export function unreachableStore(): FaultControls & { bindings: Partial<Env> } {
  if (storeName === "d1") return faultyStore(() => "throw");
  const url = new URL(env.HYPERDRIVE!.connectionString);
  url.hostname = "127.0.0.1";
  url.port = String(CLOSED_PORT);
  const faulty = faultyHyperdrive(env.HYPERDRIVE!, () => undefined, url.toString());
  return { ...faulty, bindings: { HYPERDRIVE: faulty.hyperdrive } };
}
