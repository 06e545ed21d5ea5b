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
 * It also holds the circuit breaker of each destination (URL) of the origin (breaker.ts: the
 * decisions; stored under `breaker:<url>`, so an evicted instance still knows a destination is
 * down) and the order of its backlog (arrival.ts, memory only): `acquire` asks both before a slot,
 * and `settle` tells the breaker how the request ended.
 *
 * Keyed by origin, not by full URL: two paths of one service share its capacity. Each path has
 * its own breaker, though: a destination is a URL, and one path's handler can fail while another's works.
 */
import { DurableObject } from "cloudflare:workers";
import type { BreakerSettings } from "../config/destination";
import { olderWaiting, ORDER_WAIT_SECONDS, prune, register, type Backlog } from "./arrival";
import { admit, CLOSED, record, type BreakerOutcome, type BreakerState } from "./breaker";

/** Why a request was refused: no slot free, the breaker open, a probe in flight, an older delivery first. */
export type WaitReason = "full" | "open" | "probing" | "order";

/** What `acquire` answers. */
export type SlotAnswer =
  | { readonly granted: true; readonly probe?: boolean }
  | { readonly granted: false; readonly waitSeconds: number; readonly reason?: WaitReason };

/** What the breaker and the order need to know of a request (forward.ts gives them). */
export interface AcquireOptions {
  /** The destination's URL: each has its own breaker and backlog (the origin's slots are shared). */
  readonly destination: string;
  readonly breaker: BreakerSettings;
  /** When the delivery was received (ms), or null: not ordered. */
  readonly receivedAtMs: number | null;
}

/** A delivery whose request failed, and when it is about to be retried (an estimate: the consumer decides). */
export interface RetryingDelivery {
  readonly waiter: string;
  readonly receivedAtMs: number | null;
  readonly retryInSeconds: number;
}

/** A destination's breaker as the dashboard and metrics show it. */
export interface BreakerView {
  readonly status: BreakerState["status"];
  /** Since when (ms; 0: closed since this object was made). */
  readonly sinceMs: number;
  readonly failures: number;
  /** Open: when the next probe may go (ms). */
  readonly reopenAtMs: number | null;
  /** Deliveries registered as waiting their turn. */
  readonly waiting: number;
}

const BREAKER_PREFIX = "breaker:";

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
  /** Each destination's breaker (by URL), read from storage by the first call that needs it. */
  #breakers = new Map<string, Promise<BreakerState>>();
  /** Each destination's deliveries waiting their turn, by when they were received (arrival.ts). */
  #backlogs = new Map<string, Backlog>();

  #loadBreaker(destination: string): Promise<BreakerState> {
    let breaker = this.#breakers.get(destination);
    if (breaker === undefined) {
      breaker = this.ctx.storage.get<BreakerState>(BREAKER_PREFIX + destination).then((stored) => stored ?? CLOSED);
      this.#breakers.set(destination, breaker);
    }
    return breaker;
  }

  #backlog(destination: string): Backlog {
    let backlog = this.#backlogs.get(destination);
    if (backlog === undefined) this.#backlogs.set(destination, (backlog = new Map()));
    return backlog;
  }

  /** Keeps `next` (in memory at once, so calls that follow see it; stored when it changed). */
  async #saveBreaker(destination: string, previous: BreakerState, next: BreakerState): Promise<void> {
    if (next === previous) return;
    this.#breakers.set(destination, Promise.resolve(next));
    await this.ctx.storage.put(BREAKER_PREFIX + destination, next);
  }

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
  async acquire(slotId: string, limit: number, holdMs: number, waiter: string, options?: AcquireOptions): Promise<SlotAnswer> {
    const slots = await this.#load();
    const destination = options?.destination ?? "";
    const breaker = options ? await this.#loadBreaker(destination) : CLOSED;
    // Decided and changed in memory with no await in between: concurrent calls cannot both take the last slot.
    const nowMs = Date.now();
    // The order of arrival first, then the breaker: a turn (the probe's included) goes to the oldest waiting.
    const receivedAtMs = options?.receivedAtMs ?? null;
    const backlog = this.#backlog(destination);
    prune(backlog, nowMs);
    if (receivedAtMs !== null && olderWaiting(backlog, waiter, receivedAtMs, nowMs)) {
      register(backlog, waiter, receivedAtMs, nowMs + ORDER_WAIT_SECONDS * 1000);
      return { granted: false, waitSeconds: ORDER_WAIT_SECONDS, reason: "order" };
    }
    const { admission, state } = options ? admit(breaker, nowMs, slotId, holdMs) : { admission: { go: true as const, probe: false }, state: breaker };
    if (!admission.go) {
      const waitSeconds = Math.max(1, Math.ceil((admission.untilMs - nowMs) / 1000));
      if (receivedAtMs !== null) register(backlog, waiter, receivedAtMs, admission.untilMs);
      return { granted: false, waitSeconds, reason: breaker.status === "open" ? "open" : "probing" };
    }
    const saved = this.#saveBreaker(destination, breaker, state);
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
      backlog.delete(waiter);
      writes.push(this.ctx.storage.put(SLOT_PREFIX + slotId, nowMs + holdMs), saved);
      await Promise.all(writes);
      return admission.probe ? { granted: true, probe: true } : { granted: true };
    }
    // No slot: a probe admitted above gives its turn back (it was never sent).
    writes.push(admission.probe ? this.#saveBreaker(destination, state, breaker) : saved);
    await Promise.all(writes);
    this.#waiting.set(waiter, nowMs);
    const waitSeconds = this.#waitHint(nowMs, limit);
    // While a backlog from an outage drains, every delivery refused a slot takes its place in it;
    // with no backlog (the usual contention for slots) it stays as it was: unordered, no extra waits.
    if (receivedAtMs !== null && backlog.size > 0) register(backlog, waiter, receivedAtMs, nowMs + waitSeconds * 1000);
    return { granted: false, waitSeconds, reason: "full" };
  }

  /**
   * Tells the breaker how request `slotId` ended (and gives its slot back unless `keepSlot`: a
   * request that may still be running at the destination keeps it until it expires).
   */
  async settle(slotId: string, destination: string, outcome: BreakerOutcome, breakerSettings: BreakerSettings, keepSlot: boolean, retry?: RetryingDelivery): Promise<void> {
    const breaker = await this.#loadBreaker(destination);
    const nowMs = Date.now();
    const next = record(breaker, nowMs, breakerSettings, slotId, outcome);
    // A failure that opened the breaker (or a failed probe) is retried later: it keeps its place in
    // the backlog meanwhile, so that the deliveries received after it do not overtake it.
    if (outcome === "failure" && next.status !== "closed" && retry && retry.receivedAtMs !== null) {
      register(this.#backlog(destination), retry.waiter, retry.receivedAtMs, nowMs + retry.retryInSeconds * 1000);
    }
    await Promise.all([this.#saveBreaker(destination, breaker, next), keepSlot ? undefined : this.release(slotId)]);
  }

  /** The breaker of `destination` (its URL), for the dashboard and /admin/metrics: one call per destination per view. */
  async breakerView(destination: string): Promise<BreakerView> {
    const state = await this.#loadBreaker(destination);
    const backlog = this.#backlog(destination);
    prune(backlog, Date.now());
    return { status: state.status, sinceMs: state.sinceMs, failures: state.failures, reopenAtMs: state.reopenAtMs, waiting: backlog.size };
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
