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
 *   dies mid-request does not keep it for good. `release` gives it back as soon as the answer is in;
 *   a request that ended without one (forward.ts) keeps its slot until it expires.
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
/** A refused delivery counts as waiting for this long after its last refusal (it is back well before). */
const WAITING_WINDOW_MS = 60_000;
/** The longest wait suggested (the queue's delay is the real bound). */
const MAX_WAIT_SECONDS = 30;
/** How long a request holds its slot, until requests have been timed (a fresh instance). */
const ASSUMED_HOLD_MS = 1_000;

/** The limiter of the destination at `url`. */
export function limiterFor(env: Env, url: string): DurableObjectStub<ForwardLimiter> {
  return env.FORWARD_LIMITER.get(env.FORWARD_LIMITER.idFromName(new URL(url).origin));
}

export class ForwardLimiter extends DurableObject<Env> {
  /** Slot id → when it expires (ms); read from storage by the first call of an instance. */
  #slots: Promise<Map<string, number>> | null = null;
  /** Slot id → when this instance granted it: how long requests hold a slot (memory only, a hint). */
  #grantedAtMs = new Map<string, number>();
  /** The average time a request held its slot, of those given back. */
  #averageHoldMs = ASSUMED_HOLD_MS;
  /** The deliveries refused lately (the caller's `waiter`) → when: how many wait for a slot. */
  #waiting = new Map<string, number>();

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
   * `waiter` names what asks (the delivery), so that the wait hint counts each waiting delivery once.
   */
  async acquire(slotId: string, limit: number, holdMs: number, waiter: string): Promise<SlotAnswer> {
    const slots = await this.#load();
    // Decided and changed in memory with no await in between: concurrent calls cannot both take the last slot.
    const nowMs = Date.now();
    const expired = [...slots].filter(([, expiresAtMs]) => expiresAtMs <= nowMs).map(([id]) => id);
    for (const id of expired) {
      slots.delete(id);
      // Never released (a timed-out request, a dead worker): its grant time would stay for good.
      this.#grantedAtMs.delete(id);
    }
    const writes: Promise<unknown>[] = expired.length > 0 ? [this.ctx.storage.delete(expired.map((id) => SLOT_PREFIX + id))] : [];
    if (slots.has(slotId) || slots.size < limit) {
      slots.set(slotId, nowMs + holdMs);
      this.#grantedAtMs.set(slotId, nowMs);
      this.#waiting.delete(waiter);
      writes.push(this.ctx.storage.put(SLOT_PREFIX + slotId, nowMs + holdMs));
      await Promise.all(writes);
      return { granted: true };
    }
    await Promise.all(writes);
    this.#waiting.set(waiter, nowMs);
    return { granted: false, waitSeconds: this.#waitHint(nowMs, limit) };
  }

  /** Gives slot `slotId` back (a no-op when it expired or was never taken). */
  async release(slotId: string): Promise<void> {
    const slots = await this.#load();
    const grantedAtMs = this.#grantedAtMs.get(slotId);
    this.#grantedAtMs.delete(slotId);
    if (grantedAtMs !== undefined) this.#averageHoldMs = 0.8 * this.#averageHoldMs + 0.2 * (Date.now() - grantedAtMs);
    if (!slots.delete(slotId)) return;
    await this.ctx.storage.delete(SLOT_PREFIX + slotId);
  }

  /** How many slots this instance keeps a grant time for (never more than it granted and still holds): for tests. */
  async timedSlots(): Promise<number> {
    return this.#grantedAtMs.size;
  }

  /** How many slots are held now (expired ones not counted): for tests and curiosity. */
  async inFlight(): Promise<number> {
    const nowMs = Date.now();
    return [...(await this.#load()).values()].filter((expiresAtMs) => expiresAtMs > nowMs).length;
  }

  /**
   * A random wait within the time the destination needs for the deliveries waiting (each counted
   * once: rounds of `limit`, each as long as a request holds its slot on average), at least 1 s and
   * at most MAX_WAIT_SECONDS: the refused come back spread over that time instead of all at the
   * same second, and no sooner than a slot can be free for them.
   */
  #waitHint(nowMs: number, limit: number): number {
    for (const [waiter, refusedAtMs] of this.#waiting) if (nowMs - refusedAtMs > WAITING_WINDOW_MS) this.#waiting.delete(waiter);
    const rounds = Math.ceil(this.#waiting.size / limit);
    const spreadSeconds = Math.min(MAX_WAIT_SECONDS, (rounds * this.#averageHoldMs) / 1000);
    return Math.max(1, Math.ceil(Math.random() * spreadSeconds));
  }
}
