/**
 * The out-of-order guard. Providers do not deliver in order (Stripe says so outright), so a
 * handler that overwrites state ("customer email is X") must not let an old event undo a new one.
 *
 * `isNewer(entity, version)` reads the newest version applied for the entity. If the event is
 * newer, it adds the version bump to the handler's done transaction: the bump and the effects
 * commit together or not at all. If a newer event commits in between, the `forward_only`
 * trigger (migrations/0002) aborts the transaction and the delivery is retried, and its retry
 * then learns it is stale.
 */
import { isoTime } from "../store/clock";

export interface OrderGuard {
  /**
   * True when `version` is newer than the newest applied for `entity` (or none was): apply the
   * effect. False when it is not: skip the effect, the delivery still counts as done.
   * @example
   * if (!(await ctx.order.isNewer(`customer:${customer.id}`, event.created))) return;
   * ctx.effect(db.prepare("UPDATE customers SET email = ? WHERE id = ?").bind(customer.email, customer.id));
   */
  isNewer(entity: string, version: number): Promise<boolean>;
}

/** The D1 error raised when a newer version committed first. */
export const STALE_VERSION = "stale_version";

export function createOrderGuard(
  db: D1Database,
  delivery: { source: string; id: string },
  addEffect: (statement: D1PreparedStatement) => void,
): OrderGuard {
  return {
    async isNewer(entity, version) {
      if (!Number.isSafeInteger(version)) throw new TypeError(`order guard: version must be an integer, got ${version}`);
      const applied = await db
        .prepare("SELECT version FROM entity_versions WHERE entity = ?")
        .bind(entity)
        .first<{ version: number }>();
      if (applied && applied.version >= version) return false;
      addEffect(
        db
          .prepare(
            `INSERT INTO entity_versions (entity, version, source, delivery_id, updated_at) VALUES (?1, ?2, ?3, ?4, ?5)
             ON CONFLICT (entity) DO UPDATE SET version = excluded.version, source = excluded.source,
               delivery_id = excluded.delivery_id, updated_at = excluded.updated_at`,
          )
          .bind(entity, version, delivery.source, delivery.id, isoTime(Date.now())),
      );
      return true;
    },
  };
}
