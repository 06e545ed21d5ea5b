/**
 * What a lease object keeps in storage, and which delivery an object stands for.
 *
 * Storage writes are what the object costs (each `put` key and each alarm set or deleted is a row
 * written), so the usual life of a delivery, claimed once and settled, writes two rows: `claim` sets
 * the alarm and `settle` deletes it. The lease itself (token, end, abandoned) is then in the
 * instance's memory only. That is enough while the instance lives, because a Durable Object has one
 * live instance at a time and every call goes through it (one after another, object.ts); and a failed
 * storage write resets the instance, so memory never runs ahead of storage unseen. What survives an
 * eviction or a restart is the alarm and the one stored key, `lease` (`StoredLease`), which only the
 * rare paths write:
 * - `release` (a failure): the key says "released", so that after an eviction the retry's claim is
 *   granted at once instead of meeting the safety alarm as a lease still held;
 * - the alarm finding the holder gone: the key says "abandoned", so that the requeued message's claim
 *   takes over even if the instance is evicted before it arrives;
 * - a claim that takes over (or follows any of the above), and `reset`: the key keeps the newest token,
 *   so that after an eviction the older holder still at work is refused (decisions.ts);
 * - a lease whose object was not reached by name (`ctx.id.name` unset: names over 1,024 bytes): the
 *   key also keeps the delivery, for the alarm to requeue.
 * Those paths cost a `put` more (and their `settle` a `deleteAll`, key and alarm), as every claim did
 * before. A fresh instance reads the key and the alarm once (reads write nothing); what it makes of
 * them is `loadLease` (decisions.ts).
 *
 * The delivery an alarm requeues is the object's own name, `ctx.id.name` (the consumer reaches it with
 * `idFromName(leaseName(ref))`): Cloudflare passes a name given to `idFromName()` or `getByName()`
 * through to `ctx.id.name` inside the object, in alarm handlers too, since the name is stored with the
 * alarm (changelog 2026-03-15 "Access Durable Object name via `ctx.id.name`";
 * developers.cloudflare.com/durable-objects/api/id/#name; the local runtime, workerd 2026-11-02, stores
 * it with its alarms too). It is unset for names over 1,024 bytes (and for ids from `idFromString()`,
 * which this project does not use), so a claim without it stores the delivery with the lease (see
 * above); the `ref` passed to `claim` is kept in memory as well. An alarm that knows no delivery at all
 * logs it and stops; the sweeper re-enqueues the stranded row.
 */
import { isDeliveryRef, leaseName, runMessage, type RunRef } from "../messages";

/** The name of the one stored key. */
export const LEASE_KEY = "lease";

/** The stored key, written on the rare paths only (see the top of this file). */
export interface StoredLease {
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
  readonly ref?: RunRef;
}

/** The key of before, for a lease written by an earlier version (read once, rewritten or deleted). */
export interface LegacyLease {
  readonly ref: RunRef;
  readonly token: number;
  readonly heldUntilMs: number | null;
  readonly abandoned: boolean;
}

/** The stored key as this version reads it (null: no key). */
export function fromStorage(value: StoredLease | LegacyLease | undefined): StoredLease | null {
  if (value === undefined) return null;
  if ("state" in value) return value;
  const state = value.heldUntilMs === null ? "released" : value.abandoned ? "abandoned" : "held";
  return { token: value.token, state, ref: value.ref };
}

/** The delivery an object's name stands for (`leaseName`), or null when it is unset or not one. */
export function refFromName(name: string | undefined): RunRef | null {
  if (name === undefined) return null;
  try {
    const parsed: unknown = JSON.parse(name);
    if (!Array.isArray(parsed) || (parsed.length !== 2 && parsed.length !== 3)) return null;
    const ref = parsed.length === 2 ? { source: parsed[0] as unknown, id: parsed[1] as unknown } : { source: parsed[0] as unknown, id: parsed[1] as unknown, subscriber: parsed[2] as unknown };
    return isDeliveryRef(ref) && leaseName(ref) === name ? runMessage(ref) : null;
  } catch {
    return null;
  }
}
