/**
 * DeliveryLease: one Durable Object per delivery, the single place where claims on that delivery
 * are serialized. A thin shell: each call loads the lease (once per instance), asks decisions.ts
 * what to answer and write, and applies it. The rules live there; what is stored, and why, in
 * stored.ts.
 *
 * Two things the object itself guarantees: calls run one after another (`#serially`), so a
 * decision reads state no other call changes meanwhile; and a decision's writes are issued
 * together, with no await between them, so the storage commits them as one batch.
 *
 * This object never writes D1: the consumer owns the delivery's state there. It reads it once, in
 * an alarm of an evicted instance (`#finishedInStore`).
 */
import { DurableObject } from "cloudflare:workers";
import { checkConfig, ConfigError, loadConfig } from "../../config";
import { describeError } from "../../handler-api/errors";
import type { RunRef } from "../messages";
import { decideAlarm, decideClaim, decideRelease, decideRenew, decideReset, decideSettle, deliveryOf, loadLease, type Decision, type LeaseClaim, type LeaseState, type Naming, type Writes } from "./decisions";
import { fromStorage, LEASE_KEY, refFromName, type LegacyLease, type StoredLease } from "./stored";
import { openStore, type DeliveryStatus } from "../../store";

/**
 * A run in one of these states needs no worker: an alarm that finds it so does nothing. Not
 * `failed`: a failed run's lease is left unsettled on purpose while its dead letter is unsent
 * (attempt.ts), and its alarm must bring it back to send it.
 */
const FINISHED: ReadonlySet<DeliveryStatus> = new Set(["done", "filtered"]);

/**
 * An abandoned lease's delivery goes back on the queue after a random 0 to this many seconds: the
 * leases of deliveries that died together (one of them killed their isolate) run out together, and
 * would otherwise come back in one batch again.
 */
export const REQUEUE_JITTER_SECONDS = 5;

export class DeliveryLease extends DurableObject<Env> {
  /** What this instance knows (decisions.ts); undefined: a fresh instance that has not read storage yet. */
  #state: LeaseState | undefined;
  /** The delivery as the last claim named it, for an object whose `ctx.id.name` is unset. */
  #claimedRef: RunRef | null = null;
  /** The delivery the object's name stands for (null: no usable name); an instance's name never changes. */
  readonly #namedRef: RunRef | null = refFromName(this.ctx.id.name);
  /** Calls run one after another: a claim decides from state that no other call may change meanwhile. */
  #queue: Promise<unknown> = Promise.resolve();

  #serially<T>(work: () => Promise<T>): Promise<T> {
    const result = this.#queue.then(work);
    this.#queue = result.catch(() => {});
    return result;
  }

  /** Claims the delivery for one attempt. */
  claim(ref: RunRef): Promise<LeaseClaim> {
    return this.#serially(async () => {
      const leaseMs = loadConfig(this.env).leaseSeconds * 1000;
      const nowMs = Date.now();
      this.#claimedRef = ref;
      const state = await this.#load();
      return this.#apply(decideClaim(state, this.#naming(), nowMs, leaseMs));
    });
  }

  /**
   * Extends the lease of a worker still at work on the delivery by one lease period from now.
   * False when `token` is no longer the lease (another worker took over, or it was settled).
   */
  renew(token: number): Promise<boolean> {
    return this.#serially(async () => {
      const state = await this.#load();
      const config = checkConfig(this.env);
      const decision = decideRenew(state, this.#naming(), token, Date.now(), config instanceof ConfigError ? null : config.leaseSeconds * 1000);
      if (!decision) throw config;
      return this.#apply(decision);
    });
  }

  /**
   * Gives the lease back: a retry is due at `retryAtMs` (a handler failed, or processing hit an
   * infrastructure error). The alarm is kept as a safety net at `retryAtMs` + one lease: if the
   * queued retry is lost (local queues live in memory), the alarm puts the delivery back on the
   * queue. False for a stale token.
   */
  release(token: number, retryAtMs: number): Promise<boolean> {
    return this.#serially(async () => {
      const state = await this.#load();
      const config = checkConfig(this.env);
      const decision = decideRelease(state, this.#naming(), token, retryAtMs, config instanceof ConfigError ? null : config.leaseSeconds * 1000);
      if (!decision) throw config;
      return this.#apply(decision);
    });
  }

  /**
   * The delivery is done or failed: forget it (any stored key; the alarm too unless `finished`, when
   * the store records the run done and the alarm will find it so). False for a stale token.
   */
  settle(token: number, finished = false): Promise<boolean> {
    return this.#serially(async () => this.#apply(decideSettle(await this.#load(), token, Date.now(), finished)));
  }

  /**
   * Admin replay: start over. The alarm goes; the key keeps a floor above every token handed out
   * so far, so that a worker of before the replay is refused by a fresh instance too.
   */
  reset(): Promise<void> {
    return this.#serially(async () => this.#apply(decideReset(await this.#load(), this.#naming(), Date.now())));
  }

  /**
   * The lease ran out (or a released delivery's retry never came). Either way nobody is working
   * on it: put it back on the queue and check again one lease later, until it is settled.
   */
  override alarm(): Promise<void> {
    return this.#serially(() => this.#alarm());
  }

  async #alarm(): Promise<void> {
    const fresh = this.#state === undefined;
    const state = await this.#load();
    // Evicted since, with no key: this alarm may be one a finished settle left (decisions.ts). The
    // store says whether anything is left to do; if it cannot say, the lease is treated as ended.
    if (fresh && state.stored === null && (await this.#finishedInStore())) {
      this.#state = { ...state, lease: null };
      return;
    }
    const config = checkConfig(this.env);
    const leaseMs = config instanceof ConfigError ? null : config.leaseSeconds * 1000;
    const delaySeconds = Math.floor(Math.random() * (REQUEUE_JITTER_SECONDS + 1));
    const { next, key, step } = decideAlarm(state, this.#naming(), fresh, Date.now(), leaseMs, delaySeconds);
    this.#state = next;
    if (key) await this.ctx.storage.put<StoredLease>(LEASE_KEY, key);
    switch (step.kind) {
      case "idle":
        return;
      case "config_invalid":
        console.error(`lease of ${this.#describe()}: ${describeError(config)}; trying again in a minute`);
        return this.ctx.storage.setAlarm(step.alarmAtMs);
      case "wait":
        return this.ctx.storage.setAlarm(step.alarmAtMs);
      case "unknown_delivery":
        // The sweeper re-enqueues the stranded row; its claim takes over.
        console.error(`lease object ${this.ctx.id.toString()}: its holder is gone, but it does not know its delivery; the sweeper will re-enqueue it`);
        return;
      case "requeue":
        await this.env.DELIVERIES.send(step.ref, { contentType: "json", delaySeconds: step.delaySeconds });
        return this.ctx.storage.setAlarm(step.alarmAtMs);
    }
  }

  /**
   * True when the store records the run as finished (done or filtered): nobody needs to take
   * it over. False when it has no row of it or cannot tell: then the alarm does what it always did.
   */
  async #finishedInStore(): Promise<boolean> {
    const ref = deliveryOf(this.#state, this.#naming());
    if (!ref) return false;
    try {
      const state = await openStore(this.env).replayState(ref);
      return state !== null && FINISHED.has(state.status);
    } catch (error) {
      console.error(`lease of ${this.#describe()}: could not read the store; treating the lease as ended:`, describeError(error));
      return false;
    }
  }

  /** The lease, read from storage by the first call of a fresh instance (decisions.ts `loadLease`). */
  async #load(): Promise<LeaseState> {
    if (this.#state !== undefined) return this.#state;
    const [value, alarmAtMs] = await Promise.all([this.ctx.storage.get<StoredLease | LegacyLease>(LEASE_KEY), this.ctx.storage.getAlarm()]);
    this.#state = loadLease(fromStorage(value), alarmAtMs);
    return this.#state;
  }

  /**
   * Takes the decision's state, and issues its writes together, with no await between them, so the
   * storage commits them as one batch; then answers.
   */
  async #apply<Result>({ result, next, writes }: Decision<Result>): Promise<Result> {
    this.#state = next;
    await Promise.all(this.#issue(writes));
    return result;
  }

  #issue({ alarmAtMs, key, clear }: Writes): Promise<void>[] {
    if (clear) return [this.ctx.storage.deleteAll()];
    const writes: Promise<void>[] = [];
    if (alarmAtMs !== undefined) writes.push(alarmAtMs === null ? this.ctx.storage.deleteAlarm() : this.ctx.storage.setAlarm(alarmAtMs));
    if (key) writes.push(this.ctx.storage.put<StoredLease>(LEASE_KEY, key));
    return writes;
  }

  #naming(): Naming {
    return { namedRef: this.#namedRef, claimedRef: this.#claimedRef };
  }

  #describe(): string {
    const ref = deliveryOf(this.#state, this.#naming());
    return ref ? `${ref.source}/${ref.id}` : this.ctx.id.toString();
  }
}
