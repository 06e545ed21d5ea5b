/**
 * The handler API: what users write.
 *
 * A handler receives the parsed event and a context. Its effects on the database are statements
 * it returns (or adds with `ctx.effect`): they are committed in one transaction together with the
 * delivery's `done` mark, fenced by the lease, so an effect happens exactly when the delivery is
 * done, and a worker that lost its lease commits nothing. Written with `ctx.sql` (src/sql.ts),
 * the same handler runs on D1 and on Postgres; a D1 prepared statement works with D1 only.
 */
import type { sql } from "../sql";
import type { Effect } from "../store";
import type { OrderGuard } from "./order-guard";

export { sql, SqlStatement } from "../sql";

export interface HandlerContext {
  /** The provider's delivery id. */
  readonly deliveryId: string;
  readonly source: string;
  readonly eventType: string | null;
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
   * Aborted when the handler's deadline passes (HANDLER_TIMEOUT_SECONDS): pass it to `fetch` so
   * that calls of a handler that was given up on stop too (`fetch(url, { signal: ctx.signal })`).
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

/**
 * Handlers by source, then by event type. `"*"` matches any event type of that source.
 * A delivery with no matching handler is marked done and shown as unhandled, not failed.
 */
export type HandlerRegistry = Readonly<Record<string, Readonly<Record<string, Handler>>>>;

/** Declares the registry with its types checked. */
export function defineHandlers<Registry extends HandlerRegistry>(registry: Registry): Registry {
  return registry;
}

/** The handler for a delivery, or undefined when none matches. */
export function findHandler(registry: HandlerRegistry, source: string, eventType: string | null): Handler | undefined {
  const bySource = Object.hasOwn(registry, source) ? registry[source] : undefined;
  if (!bySource) return undefined;
  if (eventType !== null && Object.hasOwn(bySource, eventType)) return bySource[eventType];
  return Object.hasOwn(bySource, "*") ? bySource["*"] : undefined;
}

/**
 * The event a handler receives: the JSON body, or for form-encoded bodies (Twilio, Slack
 * commands) an object of its fields, or else the text.
 */
export function parseEvent(body: Uint8Array): unknown {
  const text = new TextDecoder().decode(body);
  try {
    return JSON.parse(text);
  } catch {
    if (/^[^=&\s]+=[^&]*(&[^=&\s]+=[^&]*)*$/.test(text.trim())) return Object.fromEntries(new URLSearchParams(text.trim()));
    return text;
  }
}
