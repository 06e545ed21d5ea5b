/**
 * The out-of-order guard. Providers do not deliver in order (Stripe says so outright), so a
 * handler that overwrites state ("customer email is X") must not let an old event undo a new one.
 *
 * `isNewer(entity, version)` reads the newest version applied for the entity. If the event is
 * newer, it adds the version bump to the handler's done transaction: the bump and the effects
 * commit together or not at all. If a newer event commits in between, the `forward_only`
 * trigger (in either store's migrations) aborts the transaction and the delivery is retried, and
 * its retry then learns it is stale. The bump is a portable statement: the same upsert runs in D1
 * and in Postgres.
 *
 * One decision per entity and version per run: asking again returns the first answer and adds no
 * second bump (a second upsert of the same version would be refused by `forward_only`, failing the
 * delivery on every run). A bump queued earlier in the run counts as applied for later questions.
 * The store is read once per entity per run; a failed read is the database's fault, never the
 * handler's (`InfrastructureError`).
 */
import { sql, type SqlStatement } from "../sql";
import type { ProcessingStore } from "../store";
import { isoTime } from "../store/clock";
import { describeError, InfrastructureError } from "../handler-api/errors";

export interface OrderGuard {
  /**
   * True when `version` is newer than the newest applied for `entity` (or none was): apply the
   * effect. False when it is not: skip the effect, the delivery still counts as done.
   * @example
   * if (!(await ctx.order.isNewer(`customer:${customer.id}`, event.created))) return;
   * ctx.effect(ctx.sql`UPDATE customers SET email = ${customer.email} WHERE id = ${customer.id}`);
   */
  isNewer(entity: string, version: number): Promise<boolean>;
}

/** The error the `forward_only` trigger raises when a newer version committed first. */
export const STALE_VERSION = "stale_version";

/** What one run knows of an entity: the version stored, and the answers given so far. */
interface Known {
  readonly stored: number | null;
  /** The highest version this run queued a bump for. */
  queued: number | null;
  readonly answers: Map<number, boolean>;
}

export function createOrderGuard(
  store: Pick<ProcessingStore, "entityVersion">,
  delivery: { source: string; id: string },
  addEffect: (statement: SqlStatement) => void,
): OrderGuard {
  const known = new Map<string, Promise<Known>>();
  const read = (entity: string): Promise<Known> => {
    let entry = known.get(entity);
    if (!entry) {
      entry = store.entityVersion(entity).then(
        (stored): Known => ({ stored, queued: null, answers: new Map() }),
        (error: unknown) => {
          known.delete(entity);
          throw new InfrastructureError(`the order guard could not read the version of ${entity}: ${describeError(error)}`, { cause: error });
        },
      );
      known.set(entity, entry);
    }
    return entry;
  };
  return {
    async isNewer(entity, version) {
      if (!Number.isSafeInteger(version)) throw new TypeError(`order guard: version must be an integer, got ${version}`);
      const entry = await read(entity);
      const answered = entry.answers.get(version);
      if (answered !== undefined) return answered;
      const newest = Math.max(entry.stored ?? -Infinity, entry.queued ?? -Infinity);
      const newer = version > newest;
      entry.answers.set(version, newer);
      if (!newer) return false;
      entry.queued = version;
      addEffect(
        sql`INSERT INTO entity_versions (entity, version, source, delivery_id, updated_at)
            VALUES (${entity}, ${version}, ${delivery.source}, ${delivery.id}, ${isoTime(Date.now())})
            ON CONFLICT (entity) DO UPDATE SET version = excluded.version, source = excluded.source,
              delivery_id = excluded.delivery_id, updated_at = excluded.updated_at`,
      );
      return true;
    },
  };
}
