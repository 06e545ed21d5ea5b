/**
 * The Postgres store: the `Store` interface (store/store.ts) over Postgres through Hyperdrive, with
 * the same promises as the D1 store (store/d1/index.ts).
 *
 * Where its operations get their clients is given (client.ts): a client of their own each for a
 * request, a few shared ones for a queue batch or a sweep, held until `close()`. What D1 batches
 * across the deliveries of a queue batch (its claims and commits, store/d1/batcher.ts) runs here as
 * separate statements on those clients at once: Postgres runs them in parallel, and a commit is a
 * transaction of its own, so one delivery's refused effect never touches another's. The receiver's
 * inserts are group-committed (record.ts), on a client of the group's own.
 */
import type { ClosableStore } from "../store";
import { deliveryStats, failedBySubscriber, getDelivery } from "./admin";
import { postgresAlertStore } from "./alerts";
import { clientPerOperation, isStatementError, withClient, type Connections } from "./client";
import { claim, commitDone, entityVersion, recordResult } from "./lifecycle";
import { fanOut, pendingRuns } from "./subscriber-runs";
import { findDeliveryById, listDeliveries } from "./listing";
import { maintainOverview, readOverview } from "./overview";
import { countDuplicate } from "./duplicates";
import { recordDelivery } from "./record";
import { withDuplicateCounted } from "../new-delivery";
import { countFailed, replayState, resetFailedForReplay, resetForReplay } from "./replay";
import { notePreviousSecret, previousSecretUses, providerMessages, recordProviderMessage } from "./secrets";
import { applyRetention, takeStranded } from "./sweep";

/**
 * The store over the database behind `hyperdrive` (the `HYPERDRIVE` binding), its operations on
 * `connections` (a client of their own each, unless given shared ones).
 * @example
 * const store = postgresStore(env.HYPERDRIVE);
 * const outcome = await store.record(delivery, ctx);
 */
export function postgresStore(hyperdrive: Hyperdrive, connections: Connections = clientPerOperation(hyperdrive)): ClosableStore {
  const run = connections.run;
  return {
    close: connections.close,
    record: async (delivery, ctx) =>
      withDuplicateCounted(await recordDelivery(hyperdrive, ctx, delivery), () => withClient(hyperdrive, (db) => countDuplicate(db, delivery))),

    // Tried twice, as D1's batcher tries a claim (store/d1/batcher.ts): a takeover's mark whose answer
    // was lost has landed, and only its second run tells the consumer what it did (a delivery set
    // aside as failed is then dead-lettered, not found settled by the queue's retry).
    claim: (ref, token, takeover, nowMs) => twice(() => run((db) => claim(db, ref, token, takeover, nowMs))),
    commitDone: (ref, token, done, nowMs) => commitDone(connections, ref, token, done, nowMs),
    recordResult: (ref, token, result, nowMs, timing) => run((db) => recordResult(db, ref, token, result, nowMs, timing)),
    fanOut: (ref, token, subscribers, nowMs) => run((db) => fanOut(db, ref, token, subscribers, nowMs)),
    pendingRuns: (ref, nowMs) => run((db) => pendingRuns(db, ref, nowMs)),
    entityVersion: (entity) => run((db) => entityVersion(db, entity)),

    takeStranded: (cutoffs, nowMs, limit) => run((db) => takeStranded(db, cutoffs, nowMs, limit)),
    applyRetention: (deleteBeforeMs, clearBodiesBeforeMs, limit) => run((db) => applyRetention(db, deleteBeforeMs, clearBodiesBeforeMs, limit)),
    maintainOverview: (nowMs) => run((db) => maintainOverview(db, nowMs)),

    stats: (nowMs) => run((db) => deliveryStats(db, nowMs)),
    overview: (nowMs) => run((db) => readOverview(db, nowMs)),
    list: (query) => run((db) => listDeliveries(db, query)),
    findById: (sources, id) => run((db) => findDeliveryById(db, sources, id)),
    get: (ref) => run((db) => getDelivery(db, ref)),
    replayState: (ref) => run((db) => replayState(db, ref)),
    resetForReplay: (ref, from, nowMs) => run((db) => resetForReplay(db, ref, from, nowMs)),
    resetFailedForReplay: (filter, limit, nowMs) => run((db) => resetFailedForReplay(db, filter, limit, nowMs)),
    countFailed: (filter) => run((db) => countFailed(db, filter)),
    failedBySubscriber: () => run((db) => failedBySubscriber(db)),
    notePreviousSecret: (source, nowMs) => run((db) => notePreviousSecret(db, source, nowMs)),
    previousSecretUses: () => run((db) => previousSecretUses(db)),
    recordProviderMessage: (message, nowMs) => run((db) => recordProviderMessage(db, message, nowMs)),
    providerMessages: () => run((db) => providerMessages(db)),
    alerts: postgresAlertStore(connections),
  };
}

/**
 * Runs `operation`, and once more when it fails with an infrastructure error (a lost connection, a
 * passing fault): for a statement that may run twice, whose first run may have landed although its
 * answer was lost. A statement error is the statement's own, and is thrown at once.
 */
async function twice<T>(operation: () => Promise<T>): Promise<T> {
  try {
    return await operation();
  } catch (error) {
    if (isStatementError(error)) throw error;
    return operation();
  }
}
