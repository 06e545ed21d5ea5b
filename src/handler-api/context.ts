/**
 * What a handler is, and what it is given: the event and a context. Its effects on the database are
 * statements it returns (or adds with `ctx.effect`): they are committed in one transaction together
 * with the delivery's `done` mark, fenced by the lease, so an effect happens exactly when the
 * delivery is done, and a worker that lost its lease commits nothing. Written with `ctx.sql`
 * (src/sql.ts), the same handler runs on D1 and on Postgres; a D1 prepared statement works with D1
 * only.
 */
import type { Effect, sql } from "../sql";

/** Per-entity version tracking, for events that arrive out of order (processing/order-guard.ts). */
export interface OrderGuard {
  /**
   * True when `version` is newer than the newest applied for `entity` (or none was): apply the
   * effect. False when it is not: skip the effect, the delivery still counts as done. One decision
   * per entity and version per run: asking again returns the same answer and adds nothing.
   * @example
   * if (!(await ctx.order.isNewer(`customer:${customer.id}`, event.created))) return;
   * ctx.effect(ctx.sql`UPDATE customers SET email = ${customer.email} WHERE id = ${customer.id}`);
   */
  isNewer(entity: string, version: number): Promise<boolean>;
}

export interface HandlerContext {
  /** The provider's delivery id. */
  readonly deliveryId: string;
  readonly source: string;
  /**
   * The subscriber whose handler this is: a code subscriber's name (`handler` for a source's plain
   * handlers), or a forward destination's (`forward`, `<name>`). Each subscriber of a fanned-out
   * delivery runs with its own name, attempts and idempotency key.
   */
  readonly subscriber: string;
  readonly eventType: string | null;
  /** When the inbox stored the delivery (ISO 8601, UTC): the same for every attempt and replay. */
  readonly receivedAt: string;
  /** 1 on the first run, 2 on the first retry, … */
  readonly attempt: number;
  readonly env: Env;
  /**
   * Stable across retries, replays and workers: pass it to downstream APIs that deduplicate
   * (e.g. Stripe's `Idempotency-Key` header) so a repeated call has no second effect.
   */
  readonly idempotencyKey: string;
  /** The raw body bytes, exactly as signed. */
  readonly rawBody: Uint8Array;
  /** The provider's Content-Type header, as stored with the delivery; null when none was stored. */
  readonly contentType: string | null;
  /**
   * Aborted when the handler's deadline passes (HANDLER_TIMEOUT_SECONDS), or when its worker lost
   * the lease: pass it to `fetch` so that calls of a handler that was given up on stop too
   * (`fetch(url, { signal: ctx.signal })`).
   */
  readonly signal: AbortSignal;
  /**
   * Builds a portable statement: each `${value}` becomes a bound parameter (src/sql.ts).
   * @example
   * ctx.effect(ctx.sql`INSERT INTO seen (id) VALUES (${ctx.deliveryId}) ON CONFLICT DO NOTHING`);
   */
  readonly sql: typeof sql;
  /** Adds statements to the transaction that marks the delivery done. */
  effect(...statements: Effect[]): void;
  /** Per-entity version tracking, for events that arrive out of order. */
  readonly order: OrderGuard;
}

/** A handler; its returned statements join the `done` transaction like `ctx.effect`. */
export type Handler<Event = any> = (event: Event, ctx: HandlerContext) => void | Effect[] | Promise<void | Effect[]>;
