/**
 * ForwardLimiter: one Durable Object per destination origin, holding the slots of the requests in
 * flight to it, so that at most a destination's `concurrency` are in flight at once across every
 * isolate and every consumer invocation. A backlog drained after an outage then reaches the
 * backend at the pace it can take, instead of all at once.
 *
 * - `acquire` grants a slot while fewer than the caller's limit are held, else answers how long to
 *   wait. The caller then puts its delivery back on the queue for that long (a `DeferredError`),
 *   using up no attempt: no delivery fails, or is charged, because of the limit.
 * - A slot expires by itself (`holdMs`, a little more than the request timeout): a worker that
 *   dies mid-request does not keep it for good. `release` gives it back as soon as the answer is in.
 * - Slots are stored (a row each), not only kept in memory: an object that sits idle while its
 *   slots' requests run can be evicted, and a fresh instance must still count them. The usual
 *   forward costs two storage writes (the slot, its removal) and two calls to this object.
 *
 * Keyed by origin, not by full URL: two paths of one service share its capacity.
 */
import { DurableObject } from "cloudflare:workers";

/** What `acquire` answers. */
export type SlotAnswer = { readonly granted: true } | { readonly granted: false; readonly waitSeconds: number };

const SLOT_PREFIX = "slot:";
/** Refusals counted for the wait hint: those of the last 10 s. */
const REFUSAL_WINDOW_MS = 10_000;
/** The longest wait suggested (the queue's delay is the real bound). */
const MAX_WAIT_SECONDS = 30;

/** The limiter of the destination at `url`. */
export function limiterFor(env: Env, url: string): DurableObjectStub<ForwardLimiter> {
  return env.FORWARD_LIMITER.get(env.FORWARD_LIMITER.idFromName(new URL(url).origin));
}

export class ForwardLimiter extends DurableObject<Env> {
  /** Slot id → when it expires (ms); read from storage by the first call of an instance. */
  #slots: Promise<Map<string, number>> | null = null;
  /** When recent requests were refused: how many wait, for the wait hint. */
  #refusals: number[] = [];

  #load(): Promise<Map<string, number>> {
    this.#slots ??= this.ctx.storage.list<number>({ prefix: SLOT_PREFIX }).then((stored) => {
      const slots = new Map<string, number>();
      for (const [key, expiresAtMs] of stored) slots.set(key.slice(SLOT_PREFIX.length), expiresAtMs);
      return slots;
    });
    return this.#slots;
  }

  /**
   * Takes slot `slotId` for `holdMs` if fewer than `limit` are held (or it is held already: a
   * repeated call), else refuses with a suggested wait. Expired slots are dropped first.
   */
  async acquire(slotId: string, limit: number, holdMs: number): Promise<SlotAnswer> {
    const slots = await this.#load();
    // Decided and changed in memory with no await in between: concurrent calls cannot both take the last slot.
    const nowMs = Date.now();
    const expired = [...slots].filter(([, expiresAtMs]) => expiresAtMs <= nowMs).map(([id]) => id);
    for (const id of expired) slots.delete(id);
    const writes: Promise<unknown>[] = expired.length > 0 ? [this.ctx.storage.delete(expired.map((id) => SLOT_PREFIX + id))] : [];
    if (slots.has(slotId) || slots.size < limit) {
      slots.set(slotId, nowMs + holdMs);
      writes.push(this.ctx.storage.put(SLOT_PREFIX + slotId, nowMs + holdMs));
      await Promise.all(writes);
      return { granted: true };
    }
    await Promise.all(writes);
    return { granted: false, waitSeconds: this.#waitHint(nowMs, limit) };
  }

  /** Gives slot `slotId` back (a no-op when it expired or was never taken). */
  async release(slotId: string): Promise<void> {
    const slots = await this.#load();
    if (!slots.delete(slotId)) return;
    await this.ctx.storage.delete(SLOT_PREFIX + slotId);
  }

  /** How many slots are held now (expired ones not counted): for tests and curiosity. */
  async inFlight(): Promise<number> {
    const nowMs = Date.now();
    return [...(await this.#load()).values()].filter((expiresAtMs) => expiresAtMs > nowMs).length;
  }

  /**
   * A wait of 1 s plus a random share of the rounds still waiting (refusals in the last 10 s per
   * slot): the refused spread out over the time the destination needs for them, instead of all
   * coming back at the same second.
   */
  #waitHint(nowMs: number, limit: number): number {
    this.#refusals = this.#refusals.filter((atMs) => nowMs - atMs < REFUSAL_WINDOW_MS);
    this.#refusals.push(nowMs);
    const rounds = Math.min(MAX_WAIT_SECONDS - 1, Math.ceil(this.#refusals.length / limit));
    return 1 + Math.floor(Math.random() * (rounds + 1));
  }
}
