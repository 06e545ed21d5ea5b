/**
 * Every D1 call bounded in time: a call that does not answer within the store's timeout
 * (STORE_TIMEOUT_SECONDS) rejects with `StoreTimeoutError`, an infrastructure error, instead of
 * hanging while the lease is renewed through it for ever. D1 may still carry the call out after
 * that: every caller already treats an error as "may have landed" (the fenced writes, the commit
 * token, the group commit's answer), so a late landing changes nothing.
 *
 * The wrapper is a view of the database: statements prepared through it run bounded, and are
 * handed to D1's own `batch` unwrapped (it accepts only its own statements), beside statements
 * prepared elsewhere (a handler's `env.DB.prepare(…)` effect).
 */
import { StoreTimeoutError } from "../timeout";

export { StoreTimeoutError };

const unwrapped = new WeakMap<object, D1PreparedStatement>();

function within<T>(work: Promise<T>, timeoutMs: number, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new StoreTimeoutError(`D1 did not answer ${what} within ${timeoutMs / 1000} s`)), timeoutMs);
  });
  return Promise.race([work, timeout]).finally(() => clearTimeout(timer));
}

function boundedStatement(statement: D1PreparedStatement, timeoutMs: number): D1PreparedStatement {
  const view = {
    bind: (...values: unknown[]) => boundedStatement(statement.bind(...values), timeoutMs),
    first: (column?: string) => within(column === undefined ? statement.first() : statement.first(column), timeoutMs, "a query"),
    run: () => within(statement.run(), timeoutMs, "a statement"),
    all: () => within(statement.all(), timeoutMs, "a query"),
    raw: (options?: { columnNames?: boolean }) => within(statement.raw(options as { columnNames: true }), timeoutMs, "a query"),
  } as unknown as D1PreparedStatement;
  unwrapped.set(view, statement);
  return view;
}

/**
 * `db`, with each call rejecting after `timeoutMs`.
 * @example
 * const db = boundedD1(env.DB, 30_000);
 * await db.prepare("SELECT 1").first(); // or StoreTimeoutError after 30 s
 */
export function boundedD1(db: D1Database, timeoutMs: number): D1Database {
  return {
    prepare: (query: string) => boundedStatement(db.prepare(query), timeoutMs),
    batch: <T>(statements: D1PreparedStatement[]) =>
      within(db.batch<T>(statements.map((statement) => unwrapped.get(statement) ?? statement)), timeoutMs, "a batch"),
    exec: (query: string) => within(db.exec(query), timeoutMs, "an exec"),
    withSession: (constraint?: string) => db.withSession(constraint),
    dump: () => db.dump(),
  } as unknown as D1Database;
}
