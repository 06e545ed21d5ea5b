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
 *   (migrations/0006: `deliveries_lease_fence`), which is the last word: once a takeover is
 *   recorded there (before its handler runs), the worker it took over from commits nothing;
 *   until then the first result to land wins, and any later one is refused.
 * - Attempts are not counted here: D1 counts a run when it ends, or when a takeover finds it
 *   vanished (store/d1/lifecycle.ts `markTakeover`, told the vanished holder's token), so a claim
 *   whose processing met an infrastructure error (D1 or this object browning out) uses up nothing.
 * - A settled delivery leaves nothing behind: `settle` removes the alarm (and the stored key, if
 *   a rare path wrote one). A late duplicate message then meets the D1 row, which is the judge of
 *   what is done.
 *
 * What is stored, and what lives in memory only. Storage writes are what this object costs (each
 * `put` key and each alarm set or deleted is a row written), so the usual life of a delivery,
 * claimed once and settled, writes two rows: `claim` sets the alarm and `settle` deletes it. The
 * lease itself (token, end, abandoned) is then in this instance's fields only. That is enough
 * while the instance lives, because a Durable Object has one live instance at a time and every
 * call goes through it (one after another, see `#serially`); and a failed storage write resets
 * the instance, so memory never runs ahead of storage unseen. What survives an eviction or a
 * restart is the alarm and the one stored key, `lease` (`StoredLease`), which only the rare paths
 * write:
 * - `release` (a failure): the key says "released", so that after an eviction the retry's claim
 *   is granted at once instead of meeting the safety alarm as a lease still held;
 * - the alarm finding the holder gone: the key says "abandoned", so that the requeued message's
 *   claim takes over even if the instance is evicted before it arrives;
 * - a claim that takes over (or follows any of the above), and `reset`: the key keeps the newest
 *   token, so that after an eviction the older holder still at work is refused (see below);
 * - a lease whose object was not reached by name (`ctx.id.name` unset: names over 1,024 bytes):
 *   the key also keeps the delivery, for the alarm to requeue.
 * Those paths cost a `put` more (and their `settle` a `deleteAll`, key and alarm), as every claim
 * did before.
 *
 * A fresh instance (after an eviction) reads the key and the alarm once (reads write nothing):
 * - a key: the lease as it says (held until the alarm, released, or abandoned);
 * - no key, no alarm: never claimed, or settled: the claim is granted, no takeover;
 * - no key, an alarm: a lease of the hot path whose token went with the evicted instance. While
 *   its alarm is ahead, somebody may be at work: a claim is busy, and the holder's `renew`,
 *   `release` or `settle` is taken as coming from that holder (it adopts the lease). That is
 *   safe because the hot path never leaves two workers with live tokens: a second token is only
 *   ever issued by a takeover, after a release or after a reset, and each of those stores it,
 *   so a key (not this case) then tells the tokens apart. (A stalled worker of before a settle
 *   could still adopt the lease of a later duplicate message this way; that delivery is done or
 *   failed in D1, and the D1 fence refuses its writes, so it changes nothing.) When
 *   the alarm fires, the holder never said a word for a whole lease: the alarm abandons the
 *   lease and stores a floor for the tokens, the time it fired, above any token handed out
 *   before (tokens start from the clock, and that lease ended at least one lease after its
 *   token was issued).
 *
 * The delivery an alarm requeues is the object's own name, `ctx.id.name` (the consumer reaches
 * it with `idFromName(leaseName(ref))`): Cloudflare passes a name given to `idFromName()` or
 * `getByName()` through to `ctx.id.name` inside the object, in alarm handlers too, since the name
 * is stored with the alarm (changelog 2026-03-15 "Access Durable Object name via `ctx.id.name`";
 * developers.cloudflare.com/durable-objects/api/id/#name; the local runtime, workerd 2026-11-02,
 * stores it with its alarms too). It is unset for names over 1,024 bytes (and for ids from
 * `idFromString()`, which this project does not use), so a claim without it stores the delivery
 * with the lease (see above); the `ref` passed to `claim` is kept in memory as well. An alarm
 * that knows no delivery at all logs it and stops; the sweeper re-enqueues the stranded row.
 *
 * This object never writes D1: the consumer owns the delivery's state there.
 */
import { DurableObject } from "cloudflare:workers";
import { checkConfig, ConfigError, loadConfig } from "../config";
import { describeError } from "../handler-api/errors";
import { isDeliveryRef, leaseName, type DeliveryRef } from "./messages";

export type ClaimResult =
  /**
   * `takeover`: the previous holder's lease ran out without a word (it crashed or stalled);
   * `previousToken` is that holder's token, 0 when it is not known (it went with an evicted
   * instance). D1 counts the vanished run by it (store/d1/lifecycle.ts `markTakeover`).
   */
  | { readonly kind: "granted"; readonly token: number; readonly takeover: boolean; readonly previousToken: number }
  | { readonly kind: "busy"; readonly leasedUntilMs: number }
  /** Already done or failed (and no replay since): nothing to do. */
  | { readonly kind: "settled" };

/** The lease as this instance knows it. */
interface Lease {
  /**
   * The latest fencing token handed out. Null for a lease found after an eviction with only its
   * alarm left: its token went with the instance (see the top of this file).
   */
  readonly token: number | null;
  /** While a worker holds the lease: when it ends (ms). Null when nobody holds it. */
  readonly heldUntilMs: number | null;
  /** The alarm found the holder gone without a word: the next claim takes over. */
  readonly abandoned: boolean;
}

/** The stored key, written on the rare paths only (see the top of this file). */
interface StoredLease {
  /** The latest token handed out (after an orphaned lease's alarm or a reset: a floor for the next). */
  readonly token: number;
  /** The token is a floor, no holder's (an orphaned lease's alarm stored it). */
  readonly floor?: true;
  /**
   * `held`: a worker holds the lease until the alarm. `released`: nobody does (a retry is due, or
   * a reset). `abandoned`: the alarm found the holder gone; the next claim takes over.
   */
  readonly state: "held" | "released" | "abandoned";
  /** Only when `ctx.id.name` does not name the delivery. */
  readonly ref?: DeliveryRef;
}

/** The key of before, for a lease written by an earlier version (read once, rewritten or deleted). */
interface LegacyLease {
  readonly ref: DeliveryRef;
  readonly token: number;
  readonly heldUntilMs: number | null;
  readonly abandoned: boolean;
}

const STATE_KEY = "lease";
/**
 * An abandoned lease's delivery goes back on the queue after a random 0 to this many seconds: the
 * leases of deliveries that died together (one of them killed their isolate) run out together, and
 * would otherwise come back in one batch again.
 */
export const REQUEUE_JITTER_SECONDS = 5;
/** How long an alarm waits to try again while the configuration is invalid. */
const CONFIG_RETRY_MS = 60_000;

/** The delivery an object's name stands for (`leaseName`), or null when it is unset or not one. */
function refFromName(name: string | undefined): DeliveryRef | null {
  if (name === undefined) return null;
  try {
    const parsed: unknown = JSON.parse(name);
    if (!Array.isArray(parsed) || parsed.length !== 2) return null;
    const ref = { source: parsed[0] as unknown, id: parsed[1] as unknown };
    return isDeliveryRef(ref) && leaseName(ref) === name ? { source: ref.source, id: ref.id } : null;
  } catch {
    return null;
  }
}

function fromStorage(value: StoredLease | LegacyLease | undefined): StoredLease | null {
  if (value === undefined) return null;
  if ("state" in value) return value;
  const state = value.heldUntilMs === null ? "released" : value.abandoned ? "abandoned" : "held";
  return { token: value.token, state, ref: value.ref };
}

export class DeliveryLease extends DurableObject<Env> {
  /**
   * In memory only, and only for one lease period: a hint that lets a duplicate message that
   * arrives right after the delivery settled stop here. Past that (or after an eviction) the
   * D1 row judges, so a hint can never strand a delivery that was replayed.
   */
  #settledAtMs: number | null = null;
  /**
   * The lease: authoritative while this instance lives (undefined: a fresh instance that has not
   * read storage yet; null: nobody holds it and nothing is pending).
   */
  #lease: Lease | null | undefined;
  /** What the stored key holds (null: no key). Known once `#lease` is defined. */
  #stored: StoredLease | null = null;
  /** The largest token this instance handed out or saw: tokens only grow, settle and reset included. */
  #lastToken = 0;
  /** The delivery as the last claim named it, for an object whose `ctx.id.name` is unset. */
  #claimedRef: DeliveryRef | null = null;
  /** The delivery the object's name stands for (null: no usable name); an instance's name never changes. */
  readonly #namedRef: DeliveryRef | null = refFromName(this.ctx.id.name);
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
    this.#claimedRef = ref;
    const lease = await this.#load();
    if (!lease && this.#settledAtMs !== null && now - this.#settledAtMs < leaseMs) return { kind: "settled" };
    if (lease?.heldUntilMs != null && !lease.abandoned && now < lease.heldUntilMs) {
      // Also a lease found after an eviction with only its alarm left: its holder may be at work.
      return { kind: "busy", leasedUntilMs: lease.heldUntilMs };
    }
    // The previous holder vanished (alarm fired, or its lease passed before the alarm could run).
    const takeover = lease !== null && (lease.abandoned || (lease.heldUntilMs !== null && now >= lease.heldUntilMs));
    // Tokens only grow, even across a reset, a settled-then-replayed delivery or an eviction:
    // they start from the clock, so a token issued before the memory or storage was wiped can
    // never be reissued (an orphaned lease's token is at least a lease older than its alarm).
    const token = Math.max(this.#lastToken + 1, (lease?.token ?? 0) + 1, now);
    this.#settledAtMs = null;
    const held: Lease = { token, heldUntilMs: now + leaseMs, abandoned: false };
    // The hot path writes the alarm alone. A takeover leaves the older holder possibly at work,
    // and a stored key must never say "released" or "abandoned" while a holder works: then the
    // new token is stored, so that a fresh instance can still refuse the older one.
    const store = takeover || this.#stored !== null || this.#namedRef === null;
    await this.#write(held, store ? { token, state: "held", ...this.#refToStore() } : undefined, held.heldUntilMs!);
    return { kind: "granted", token, takeover, previousToken: takeover ? (lease.token ?? 0) : 0 };
  }

  /**
   * Extends the lease of a worker still at work on the delivery by one lease period from now.
   * False when `token` is no longer the lease (another worker took over, or it was settled).
   */
  renew(token: number): Promise<boolean> {
    return this.#serially(() => this.#renew(token));
  }

  async #renew(token: number): Promise<boolean> {
    const lease = await this.#load();
    if (!lease || lease.heldUntilMs === null) return false;
    // A null token: the instance was evicted while its holder worked; this is that holder (see
    // the top of this file), and it adopts the lease.
    if (lease.token !== null && lease.token !== token) return false;
    // Also after the alarm marked it abandoned: nobody took over yet, and the requeued message
    // will find it busy again.
    const heldUntilMs = Date.now() + loadConfig(this.env).leaseSeconds * 1000;
    // One write, the alarm; the stored key is rewritten only if it says "abandoned".
    // A floor gives way to the holder's own token (it is no longer unknown).
    const stored = this.#stored !== null && (this.#stored.state !== "held" || this.#stored.floor) ? { token, state: "held" as const, ...this.#refToStore() } : undefined;
    await this.#write({ token, heldUntilMs, abandoned: false }, stored, heldUntilMs);
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
    const lease = await this.#load();
    if (!lease || (lease.token !== null && lease.token !== token)) return false;
    const leaseMs = loadConfig(this.env).leaseSeconds * 1000;
    // Stored (a rare path): after an eviction the safety alarm alone would read as a lease still
    // held, and the retry would meet "busy" until it fired.
    await this.#write({ token, heldUntilMs: null, abandoned: false }, { token, state: "released", ...this.#refToStore() }, retryAtMs + leaseMs);
    return true;
  }

  /** The delivery is done or failed: forget it (alarm, and any stored key). False for a stale token. */
  settle(token: number): Promise<boolean> {
    return this.#serially(() => this.#settle(token));
  }

  async #settle(token: number): Promise<boolean> {
    const lease = await this.#load();
    // Nothing held: settled already (a late or repeated settle), or never claimed. Setting the
    // settled hint now could turn a replay's message away; there is nothing to forget anyway.
    if (!lease) return true;
    if (lease.token !== null && lease.token !== token) return false;
    const stored = this.#stored;
    this.#lease = null;
    this.#stored = null;
    this.#settledAtMs = Date.now();
    // One write on the hot path. deleteAll() removes the alarm too: compatibility_date ≥
    // 2026-02-24 (wrangler.toml).
    await (stored ? this.ctx.storage.deleteAll() : this.ctx.storage.deleteAlarm());
    return true;
  }

  /**
   * Admin replay: start over. The alarm goes; the key keeps a floor above every token handed out
   * so far (a rare path), so that a worker of before the replay is refused by a fresh instance too.
   */
  reset(): Promise<void> {
    return this.#serially(() => this.#reset());
  }

  async #reset(): Promise<void> {
    await this.#load();
    const token = Math.max(this.#lastToken, Date.now());
    const stored: StoredLease = { token, state: "released", ...this.#refToStore() };
    this.#lease = { token, heldUntilMs: null, abandoned: false };
    this.#lastToken = token;
    this.#stored = stored;
    this.#settledAtMs = null;
    await Promise.all([this.ctx.storage.put<StoredLease>(STATE_KEY, stored), this.ctx.storage.deleteAlarm()]);
  }

  /**
   * The lease ran out (or a released delivery's retry never came). Either way nobody is working
   * on it: put it back on the queue and check again one lease later, until it is settled.
   */
  override alarm(): Promise<void> {
    return this.#serially(() => this.#alarm());
  }

  async #alarm(): Promise<void> {
    const fresh = this.#lease === undefined;
    let lease = await this.#load();
    if (!lease) {
      // Settled or reset by this instance: nothing to watch.
      if (!fresh) return;
      // A fresh instance with no key: this alarm is all that is left of a lease of the hot path
      // (getAlarm() reads null while the alarm runs). It fired: that lease has ended. Kept in
      // memory, so that a claim before the next alarm (the configuration branch below) takes
      // over, and that next alarm still watches it.
      lease = { token: null, heldUntilMs: 0, abandoned: false };
      this.#lease = lease;
    }
    const config = checkConfig(this.env);
    if (config instanceof ConfigError) {
      // The delivery waits for the configuration to be fixed; the alarm must not die meanwhile.
      console.error(`lease of ${this.#describe()}: ${describeError(config)}; trying again in a minute`);
      await this.ctx.storage.setAlarm(Date.now() + CONFIG_RETRY_MS);
      return;
    }
    const leaseMs = config.leaseSeconds * 1000;
    const now = Date.now();
    if (lease.heldUntilMs !== null && now < lease.heldUntilMs) {
      // This alarm was scheduled for an earlier lease; the current one (renewed, or granted
      // since) is alive: wait for its end instead of abandoning it.
      await this.ctx.storage.setAlarm(lease.heldUntilMs);
      return;
    }
    if (lease.heldUntilMs !== null && !lease.abandoned) {
      // Stored (a rare path: its holder died), so that the requeued message's claim takes over
      // even after an eviction. A lost token is replaced by a floor: every token issued before
      // is older than this lease's end, which is now at the latest.
      // The floor is not a holder's token: the lease keeps null (unknown holder) in memory.
      const token = lease.token ?? Math.max(this.#lastToken, now);
      this.#lease = { token: lease.token, heldUntilMs: lease.heldUntilMs, abandoned: true };
      this.#lastToken = Math.max(this.#lastToken, token);
      this.#stored = { token, state: "abandoned", ...(lease.token === null ? { floor: true as const } : {}), ...this.#refToStore() };
      await this.ctx.storage.put<StoredLease>(STATE_KEY, this.#stored);
    }
    const ref = this.#deliveryRef();
    if (!ref) {
      // No name and nothing stored to say which delivery this is (it cannot happen with a name
      // up to 1,024 bytes, see the top of this file). The sweeper re-enqueues the stranded row;
      // its claim takes over. No new alarm: it could requeue nothing either.
      console.error(`lease object ${this.ctx.id.toString()}: its holder is gone, but it does not know its delivery; the sweeper will re-enqueue it`);
      return;
    }
    // At-least-once: a duplicate message is harmless, the next claim sorts it out. The D1 row
    // judges whether there is anything left to do.
    const delaySeconds = Math.floor(Math.random() * (REQUEUE_JITTER_SECONDS + 1));
    await this.env.DELIVERIES.send(ref, { contentType: "json", delaySeconds });
    await this.ctx.storage.setAlarm(now + leaseMs + delaySeconds * 1000);
  }

  /** The lease, read from storage by the first call of a fresh instance (see the top of this file). */
  async #load(): Promise<Lease | null> {
    if (this.#lease !== undefined) return this.#lease;
    const [value, alarmAtMs] = await Promise.all([this.ctx.storage.get<StoredLease | LegacyLease>(STATE_KEY), this.ctx.storage.getAlarm()]);
    const stored = fromStorage(value);
    this.#stored = stored;
    if (stored) {
      this.#lastToken = Math.max(this.#lastToken, stored.token);
      // A held lease ends at its alarm; none (this is the alarm, running): it has ended.
      const heldUntilMs = stored.state === "released" ? null : (alarmAtMs ?? 0);
      this.#lease = { token: stored.floor ? null : stored.token, heldUntilMs, abandoned: stored.state === "abandoned" };
    } else {
      this.#lease = alarmAtMs === null ? null : { token: null, heldUntilMs: alarmAtMs, abandoned: false };
    }
    return this.#lease;
  }

  /**
   * Sets the lease in memory and the alarm, and the stored key if one is given: issued together,
   * with no await between them, so the storage commits them as one batch.
   */
  async #write(lease: Lease, stored: StoredLease | undefined, alarmAtMs: number): Promise<void> {
    this.#lease = lease;
    if (lease.token !== null) this.#lastToken = Math.max(this.#lastToken, lease.token);
    const writes = [this.ctx.storage.setAlarm(alarmAtMs)];
    if (stored) {
      this.#stored = stored;
      writes.push(this.ctx.storage.put<StoredLease>(STATE_KEY, stored));
    }
    await Promise.all(writes);
  }

  /** The delivery: the object's name, else what a claim stored or said. */
  #deliveryRef(): DeliveryRef | null {
    return this.#namedRef ?? this.#stored?.ref ?? this.#claimedRef;
  }

  /** The delivery, for a stored key, when the object's name does not carry it. */
  #refToStore(): { ref?: DeliveryRef } {
    if (this.#namedRef) return {};
    const ref = this.#stored?.ref ?? this.#claimedRef;
    return ref ? { ref } : {};
  }

  #describe(): string {
    const ref = this.#deliveryRef();
    return ref ? `${ref.source}/${ref.id}` : this.ctx.id.toString();
  }
}
