/**
 * The store's door: `openStore` picks the implementation from the bindings, so that nothing
 * outside src/store knows which database runs (store.ts says what both promise).
 */
import { d1Store } from "./d1";
import { postgresStore } from "./postgres";
import type { Store } from "./store";

export type { CommitResult, Effect, Store, Takeover, WaitUntil } from "./store";

/**
 * The store for one request, queue batch or sweep: open it where the work starts and pass it
 * down; never keep one across requests. Postgres when the Worker has a Hyperdrive binding
 * (`wrangler … --env postgres`), else D1.
 * @example
 * const outcome = await openStore(c.env).record(delivery, c.executionCtx);
 */
export function openStore(env: Env): Store {
  return env.HYPERDRIVE ? postgresStore(env.HYPERDRIVE) : d1Store(env.DB);
}
