/**
 * What the Postgres queries of this folder need of a connection: one method, which pg's `Client`
 * has. Declared here so that the queries depend on no driver, and a test can hand them any client.
 *
 * Every function given a `Queryable` runs its statements on that one client; the few that need a
 * transaction of their own open it there (`ownTransaction`), so they must be given a client that is
 * not already in one.
 */
export interface Queryable {
  query<R = any>(text: string, values?: readonly unknown[]): Promise<{ rows: R[]; rowCount: number | null }>;
  /**
   * `queryMode: "extended"` sends the statement through the extended protocol even without values,
   * where the server refuses more than one statement in the text (42601): pg's simple protocol,
   * used for a text without values, would run `INSERT …; ROLLBACK` as two.
   */
  query<R = any>(config: { text: string; values?: readonly unknown[]; queryMode?: "extended" }): Promise<{ rows: R[]; rowCount: number | null }>;
}

/**
 * Runs `work` between BEGIN and COMMIT on `q`, or ROLLBACK when it throws (the error is rethrown).
 * Under Hyperdrive's transaction pooling a transaction is what keeps statements on one server
 * connection, so row locks taken in `work` hold until the end.
 * @example
 * const mark = await ownTransaction(q, async () => (await q.query("SELECT value FROM inbox_marks WHERE name = 'x' FOR UPDATE")).rows[0]);
 */
export async function ownTransaction<T>(q: Queryable, work: () => Promise<T>): Promise<T> {
  await q.query("BEGIN");
  try {
    const result = await work();
    await q.query("COMMIT");
    return result;
  } catch (error) {
    // A failed ROLLBACK (a lost connection) ends the transaction anyway: the first error is the one to see.
    await q.query("ROLLBACK").catch(() => undefined);
    throw error;
  }
}
