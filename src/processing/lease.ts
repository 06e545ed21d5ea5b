/**
 * DeliveryLease: one Durable Object per delivery, the single place where claims on that delivery
 * are serialized.
 *
 * - `claim` hands out a lease with a fresh fencing token, or says the delivery is busy or settled.
 *   Two workers never hold the same delivery.
 * - The lease is held by the object's one alarm. The worker extends it with `renew` while it
 *   works; when the alarm fires and the lease has passed without a word from its holder, the
 *   holder is presumed dead: the delivery goes back on the queue and the next claim takes over
 *   (`takeover: true`, which the consumer's crash-loop check needs).
 * - `release` (a retry is due, or processing hit an infrastructure error) and `settle` (done or
 *   failed) are refused for a stale token, so a worker whose lease ran out cannot overwrite the
 *   work of the worker that took over. The same token fences the handler's D1 commit
 *   (migrations/0001: `deliveries_lease_fence`).
 * - Attempts are not counted here: D1 counts a handler run when it starts (store/lifecycle.ts
 *   `markProcessing`), so a claim whose processing never reached the handler (D1 or this object
 *   browning out) uses up nothing.
 * - A settled delivery leaves nothing behind: `settle` deletes the storage and, with the
 *   compatibility date ≥ 2026-02-24, the alarm. A late duplicate message then meets the D1 row,
 *   which is the judge of what is done.
 *
 * This object never writes D1: the consumer owns the delivery's state there.
 */
import { DurableObject } from "cloudflare:workers";
import { checkConfig, ConfigError, loadConfig } from "../config";
import { describeError } from "./errors";
import type { DeliveryRef } from "./messages";

export type ClaimResult =
  /** `takeover`: the previous holder's lease ran out without a result (it crashed or stalled). */
  | { readonly kind: "granted"; readonly token: number; readonly takeover: boolean }
  | { readonly kind: "busy"; readonly leasedUntilMs: number }
  /** Already done or failed (and no replay since): nothing to do. */
  | { readonly kind: "settled" };

interface LeaseState {
  readonly ref: DeliveryRef;
  /** The latest fencing token handed out. */
  token: number;
  /** While a worker holds the lease: when it ends (ms). Null when nobody holds it. */
  heldUntilMs: number | null;
  /** The alarm found the holder gone without a word: the next claim takes over. */
  abandoned: boolean;
}

const STATE_KEY = "lease";
/** How long an alarm waits to try again while the configuration is invalid. */
const CONFIG_RETRY_MS = 60_000;

export class DeliveryLease extends DurableObject<Env> {
  /**
   * In memory only, and only for one lease period: a hint that lets a duplicate message that
   * arrives right after the delivery settled stop here. Past that (or after an eviction) the
   * D1 row judges, so a hint can never strand a delivery that was replayed.
   */
  #settledAtMs: number | null = null;
  /**
   * The stored state as last read or written by this instance (undefined: not read yet). All
   * access goes through this object, so the copy cannot go stale while the instance lives; it
   * saves a storage read on every call after the first.
   */
  #state: LeaseState | null | undefined;
  /** Calls run one after another: a claim decides from state that no other call may change meanwhile. */
  #queue: Promise<unknown> = Promise.resolve();

  #serially<T>(work: () => Promise<T>): Promise<T> {
    const result = this.#queue.then(work);
    this.#queue = result.catch(() => {});
    return result;
  }

  /** Claims the delivery for one attempt. */
  claim(ref: DeliveryRef): Promise<ClaimResult> {
    return this.#serially(() => this.#claim(ref));
  }

  async #claim(ref: DeliveryRef): Promise<ClaimResult> {
    const leaseMs = loadConfig(this.env).leaseSeconds * 1000;
    const now = Date.now();
    const state = await this.#load();
    if (!state && this.#settledAtMs !== null && now - this.#settledAtMs < leaseMs) return { kind: "settled" };
    if (state?.heldUntilMs != null && !state.abandoned && now < state.heldUntilMs) {
      return { kind: "busy", leasedUntilMs: state.heldUntilMs };
    }
    // The previous holder vanished (alarm fired, or its lease passed before the alarm could run).
    const takeover = state !== null && (state.abandoned || (state.heldUntilMs !== null && now >= state.heldUntilMs));
    // Tokens only grow, even across a reset or a settled-then-replayed delivery: they start
    // from the clock, so a token issued before the storage was wiped can never be reissued.
    const token = Math.max((state?.token ?? 0) + 1, now);
    this.#settledAtMs = null;
    await this.#save({ ref, token, heldUntilMs: now + leaseMs, abandoned: false });
    return { kind: "granted", token, takeover };
  }

  /**
   * Extends the lease of a worker still at work on the delivery by one lease period from now.
   * False when `token` is no longer the lease (another worker took over, or it was settled).
   */
  renew(token: number): Promise<boolean> {
    return this.#serially(() => this.#renew(token));
  }

  async #renew(token: number): Promise<boolean> {
    const state = await this.#load();
    if (!state || state.token !== token || state.heldUntilMs === null) return false;
    // Also after the alarm marked it abandoned: nobody took over yet, and the requeued message
    // will find it busy again.
    const heldUntilMs = Date.now() + loadConfig(this.env).leaseSeconds * 1000;
    await this.#save({ ...state, heldUntilMs, abandoned: false });
    return true;
  }

  /**
   * Gives the lease back: a retry is due at `retryAtMs` (a handler failed, or processing hit an
   * infrastructure error). The alarm is kept as a safety net at `retryAtMs` + one lease: if the
   * queued retry is lost (local queues live in memory), the alarm puts the delivery back on the
   * queue. False for a stale token.
   */
  release(token: number, retryAtMs: number): Promise<boolean> {
    return this.#serially(() => this.#release(token, retryAtMs));
  }

  async #release(token: number, retryAtMs: number): Promise<boolean> {
    const state = await this.#load();
    if (!state || state.token !== token) return false;
    const leaseMs = loadConfig(this.env).leaseSeconds * 1000;
    await this.#save({ ...state, heldUntilMs: null, abandoned: false }, retryAtMs + leaseMs);
    return true;
  }

  /** The delivery is done or failed: forget it (storage and alarm). False for a stale token. */
  settle(token: number): Promise<boolean> {
    return this.#serially(() => this.#settle(token));
  }

  async #settle(token: number): Promise<boolean> {
    const state = await this.#load();
    // Nothing held: a late settle, e.g. from a worker of before a replay's reset. Setting the
    // settled hint now would turn the replay's message away; there is nothing to forget anyway.
    if (!state) return true;
    if (state.token !== token) return false;
    await this.#forget();
    return true;
  }

  /** Admin replay: start over. */
  reset(): Promise<void> {
    return this.#serially(() => this.#reset());
  }

  async #reset(): Promise<void> {
    await this.#forget();
    this.#settledAtMs = null;
  }

  /**
   * The lease ran out (or a released delivery's retry never came). Either way nobody is working
   * on it: put it back on the queue and check again one lease later, until it is settled.
   */
  override alarm(): Promise<void> {
    return this.#serially(() => this.#alarm());
  }

  async #alarm(): Promise<void> {
    const state = await this.#load();
    if (!state) return;
    const config = checkConfig(this.env);
    if (config instanceof ConfigError) {
      // The delivery waits for the configuration to be fixed; the alarm must not die meanwhile.
      console.error(`lease of ${state.ref.source}/${state.ref.id}: ${describeError(config)}; trying again in a minute`);
      await this.ctx.storage.setAlarm(Date.now() + CONFIG_RETRY_MS);
      return;
    }
    const leaseMs = config.leaseSeconds * 1000;
    const now = Date.now();
    if (state.heldUntilMs !== null && now < state.heldUntilMs) {
      // This alarm was scheduled for an earlier lease; the current one (renewed, or granted
      // since) is alive: wait for its end instead of abandoning it.
      await this.ctx.storage.setAlarm(state.heldUntilMs);
      return;
    }
    if (state.heldUntilMs !== null) await this.#put({ ...state, abandoned: true });
    // At-least-once: a duplicate message is harmless, the next claim sorts it out.
    await this.env.DELIVERIES.send(state.ref, { contentType: "json" });
    await this.ctx.storage.setAlarm(now + leaseMs);
  }

  async #load(): Promise<LeaseState | null> {
    if (this.#state === undefined) this.#state = (await this.ctx.storage.get<LeaseState>(STATE_KEY)) ?? null;
    return this.#state;
  }

  #put(state: LeaseState): Promise<void> {
    this.#state = state;
    return this.ctx.storage.put<LeaseState>(STATE_KEY, state);
  }

  /** The state and the lease's alarm, issued together so the storage commits them as one write. */
  async #save(state: LeaseState, alarmAtMs = state.heldUntilMs!): Promise<void> {
    await Promise.all([this.#put(state), this.ctx.storage.setAlarm(alarmAtMs)]);
  }

  async #forget(): Promise<void> {
    this.#settledAtMs = Date.now();
    this.#state = null;
    // Removes the alarm too: compatibility_date ≥ 2026-02-24 (wrangler.toml).
    await this.ctx.storage.deleteAll();
  }
}
