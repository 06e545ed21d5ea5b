/**
 * The D1 store: the `Store` interface (store/store.ts) over the D1 queries of this folder.
 *
 * One is opened per request, queue batch or sweep. The consumer's claims and commits go through
 * this store's two batchers (batcher.ts), so the deliveries of one queue batch share D1 round trips;
 * the receiver's inserts share them across requests (group-commit.ts).
 */
import { isSubscriberRun, type DeliveryRef, type RunRef } from "../../delivery-ref";
import { claimFromRow } from "../claims";
import { SqlStatement } from "../../sql";
import { deliveryStats, failedBySubscriber, getDelivery } from "./admin";
import { d1AlertStore } from "./alerts";
import { createBatcher, type StatementBatcher } from "./batcher";
import { countDuplicate } from "./duplicates";
import { recordDeliveryGrouped } from "./group-commit";
import { withDuplicateCounted } from "../new-delivery";
import { judgeFailedCommit } from "../commit-outcome";
import { claimedDelivery, committedWith, isLeaseLost, markDone, markTakeover, readClaim, recordResult, requireDone } from "./lifecycle";
import { bodyFromRow } from "./columns";
import { fanOut, markRunDone, markRunTakeover, pendingRuns, readRunClaim, recordRunResult, requireRunDone, runCommittedWith, summarise } from "./subscriber-runs";
import { findDeliveryById, listDeliveries } from "./listing";
import { maintainOverview, readOverview } from "./overview";
import { countFailed, replayState, resetFailedForReplay, resetForReplay } from "./replay";
import type { Effect, Store, Takeover } from "../store";
import type { ClaimRow, StoreClaim } from "../claims";
import { notePreviousSecret, previousSecretUses, providerMessages, recordProviderMessage } from "./secrets";
import { applyRetention, takeStranded } from "./sweep";

/**
 * True when D1 refused a statement itself (a constraint, a trigger such as the order guard's, bad
 * SQL): the delivery's own effects are at fault, and its attempt counts like a handler error.
 * Anything else from D1 (a lost connection, an overloaded, busy or reset database) is
 * infrastructure: retried without using up an attempt. SQLite's result code ends D1's message,
 * e.g. "D1_ERROR: UNIQUE constraint failed: payments.delivery_id: SQLITE_CONSTRAINT".
 */
export function isStatementError(error: unknown): boolean {
  return error instanceof Error && STATEMENT_ERROR.test(error.message);
}

/**
 * SQLite's result codes for a statement D1 refused on its own account: a constraint (triggers
 * included), bad SQL or a function it may not call, a wrong type, a parameter out of range, a
 * value too big. BUSY, LOCKED, IOERR, NOMEM, INTERRUPT, FULL and the rest are the database's
 * trouble, not the statement's.
 */
const STATEMENT_ERROR = /\bSQLITE_(CONSTRAINT(_[A-Z]+)?|ERROR|MISMATCH|RANGE|TOOBIG|AUTH)\b/;

/**
 * A handler's effect as a D1 statement: a portable one rendered with `?N` placeholders. D1 binds
 * numbers as doubles: a bigint beyond 2^53 would be stored rounded (Postgres stores it exactly), so
 * it throws instead, which refuses the commit for good.
 */
function d1Statement(db: D1Database, effect: Effect): D1PreparedStatement {
  if (!(effect instanceof SqlStatement)) return effect;
  const values = effect.values.map((value) => (typeof value === "boolean" ? (value ? 1 : 0) : typeof value === "bigint" ? d1Integer(value) : value));
  return db.prepare(effect.render((position) => `?${position}`)).bind(...values);
}

function d1Integer(value: bigint): number {
  if (value > BigInt(Number.MAX_SAFE_INTEGER) || value < BigInt(Number.MIN_SAFE_INTEGER)) {
    throw new RangeError(`${value} is beyond what D1 binds exactly (2^53): bind it as text, or as a number within range`);
  }
  return Number(value);
}

export function d1Store(db: D1Database): Store {
  // Made on first use: only the consumer needs them.
  let marks: StatementBatcher | undefined;
  let commits: StatementBatcher | undefined;

  /** A subscriber's claim: a read, or a takeover's fenced write with its delivery's summary (subscriber-runs.ts). */
  async function claimRun(ref: Required<RunRef>, token: number, takeover: Takeover | null, nowMs: number): Promise<StoreClaim> {
    if (!takeover) {
      const [result] = await (marks ??= createBatcher(db)).run([readRunClaim(db, ref, token)]);
      const row = result!.results[0] as Record<string, unknown> | undefined;
      return claimFromRow(row && ({ ...row, body: bodyFromRow(row) } as unknown as ClaimRow));
    }
    const [taken, , delivery] = await (marks ??= createBatcher(db)).run(markRunTakeover(db, ref, token, takeover.previousToken, takeover.maxAttempts, nowMs));
    const run = taken!.results[0] as Record<string, unknown> | undefined;
    const row = delivery!.results[0] as Record<string, unknown> | undefined;
    if (!run || !row) return { kind: "gone" };
    return claimFromRow({ ...row, ...run, body: run.status === "processing" ? bodyFromRow(row) : null } as unknown as ClaimRow);
  }

  return {
    record: async (delivery, ctx) => withDuplicateCounted(await recordDeliveryGrouped(db, ctx, delivery), () => countDuplicate(db, delivery)),

    async claim(ref, token, takeover, nowMs) {
      if (isSubscriberRun(ref)) return claimRun(ref, token, takeover, nowMs);
      // A free lease's claim only reads the row; a takeover is recorded first (lifecycle.ts).
      const statement = takeover ? markTakeover(db, ref, token, takeover.previousToken, takeover.maxAttempts, nowMs) : readClaim(db, ref, token);
      const [result] = await (marks ??= createBatcher(db)).run([statement]);
      return claimedDelivery(result!);
    },

    async commitDone(ref, token, { handled, effects, run }, nowMs) {
      let statements: D1PreparedStatement[];
      try {
        const marks = isSubscriberRun(ref)
          ? [markRunDone(db, ref, token, handled, nowMs, run), requireRunDone(db, ref, token)]
          : [markDone(db, ref, token, handled, nowMs, run), requireDone(db, ref, token)];
        statements = [...marks, ...effects.map((effect) => d1Statement(db, effect))];
        // A subscriber's done mark moves its delivery's summary, in the same transaction.
        if (isSubscriberRun(ref)) statements.push(summarise(db, ref, nowMs));
      } catch (error) {
        // A statement D1 would not even prepare: the handler's, never going to work.
        return { kind: "refused", error, permanent: true };
      }
      try {
        await (commits ??= createBatcher(db)).run(statements);
        return { kind: "committed" };
      } catch (error) {
        // A commit of ours may have landed although D1 reported an error: then it stands.
        const committed = () => (isSubscriberRun(ref) ? runCommittedWith(db, ref, token) : committedWith(db, ref, token));
        return judgeFailedCommit(error, { isStatementError, isLeaseLost, committed });
      }
    },

    async recordResult(ref, token, result, nowMs, run) {
      if (!isSubscriberRun(ref)) return recordResult(db, ref, token, result, nowMs, run);
      const [written] = await db.batch(recordRunResult(db, ref, token, result, nowMs, run));
      return (written!.results[0] as { repeats: number } | undefined)?.repeats ?? 0;
    },

    async fanOut(ref, token, subscribers, nowMs) {
      const [marked] = await db.batch(fanOut(db, ref, token, subscribers, nowMs));
      return marked!.meta.changes > 0;
    },
    pendingRuns: (ref, nowMs) => pendingRuns(db, ref, nowMs),

    async entityVersion(entity) {
      const row = await db.prepare("SELECT version FROM entity_versions WHERE entity = ?").bind(entity).first<{ version: number }>();
      return row?.version ?? null;
    },

    takeStranded: (cutoffs, nowMs, limit) => takeStranded(db, cutoffs, nowMs, limit),
    applyRetention: (deleteBeforeMs, clearBodiesBeforeMs, limit) => applyRetention(db, deleteBeforeMs, clearBodiesBeforeMs, limit),
    maintainOverview: (nowMs) => maintainOverview(db, nowMs),

    stats: (nowMs) => deliveryStats(db, nowMs),
    overview: (nowMs) => readOverview(db, nowMs),
    list: (query) => listDeliveries(db, query),
    findById: (sources, id) => findDeliveryById(db, sources, id),
    get: (ref: DeliveryRef) => getDelivery(db, ref),
    replayState: (ref) => replayState(db, ref),
    resetForReplay: (ref, from, nowMs) => resetForReplay(db, ref, from, nowMs),
    resetFailedForReplay: (filter, limit, nowMs) => resetFailedForReplay(db, filter, limit, nowMs),
    countFailed: (filter) => countFailed(db, filter),
    failedBySubscriber: () => failedBySubscriber(db),
    notePreviousSecret: (source, nowMs) => notePreviousSecret(db, source, nowMs),
    previousSecretUses: () => previousSecretUses(db),
    recordProviderMessage: (message, nowMs) => recordProviderMessage(db, message, nowMs),
    providerMessages: () => providerMessages(db),
    alerts: d1AlertStore(db),
  };
}
