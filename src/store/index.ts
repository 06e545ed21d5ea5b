/**
 * The store's door: `openStore` picks the implementation from the bindings, so that nothing
 * outside src/store knows which database runs (store.ts says what both promise).
 */
import { d1Store } from "./d1";
import type { Store } from "./store";

export type { CommitResult, Effect, Store, Takeover, WaitUntil } from "./store";

/**
 * The store for one request, queue batch or sweep: open it where the work starts and pass it
 * down; never keep one across requests.
 */
export function openStore(env: Env): Store {
  return d1Store(env.DB);
}
