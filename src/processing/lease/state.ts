/**
 * What a lease decision reads and returns (decisions.ts): the lease as an instance knows it, which
 * delivery the object is for, a call's answer, and the storage writes to make.
 */
import type { RunRef } from "../messages";
import type { StoredLease } from "./stored";

/** The lease's answer to a claim (the store's answer is `StoreClaim`, store/claims.ts). */
export type LeaseClaim =
  /**
   * `takeover`: the previous holder's lease ran out without a word (it crashed or stalled);
   * `previousToken` is that holder's token, 0 when it is not known (it went with an evicted
   * instance). D1 counts the vanished run by it (store/d1/lifecycle.ts `markTakeover`).
   */
  | { readonly kind: "granted"; readonly token: number; readonly takeover: boolean; readonly previousToken: number }
  | { readonly kind: "busy"; readonly leasedUntilMs: number }
  /** Already done or failed (and no replay since): nothing to do. */
  | { readonly kind: "settled" };

/** The lease as an instance knows it. */
export interface Lease {
  /**
   * The latest fencing token handed out. Null for a lease found after an eviction with only its
   * alarm left: its token went with the instance (see the top of decisions.ts).
   */
  readonly token: number | null;
  /** While a worker holds the lease: when it ends (ms). Null when nobody holds it. */
  readonly heldUntilMs: number | null;
  /** The alarm found the holder gone without a word: the next claim takes over. */
  readonly abandoned: boolean;
}

/** All an instance knows once it has read storage: what every decision reads and returns anew. */
export interface LeaseState {
  /** Authoritative while the instance lives; null: nobody holds it and nothing is pending. */
  readonly lease: Lease | null;
  /** What the stored key holds (null: no key). */
  readonly stored: StoredLease | null;
  /** The largest token handed out or seen: tokens only grow, settle and reset included. */
  readonly lastToken: number;
  /**
   * When this instance settled the delivery (null: not since the last claim or reset). A hint, for
   * one lease period only, that lets a duplicate message that arrives right after the settle stop
   * here; past that (or after an eviction) the D1 row judges, so it never strands a replay.
   */
  readonly settledAtMs: number | null;
}

/** Which delivery the object is for: its name's, else the last claim's (stored.ts). */
export interface Naming {
  /** The delivery the object's name stands for; null when `ctx.id.name` does not carry it. */
  readonly namedRef: RunRef | null;
  /** The delivery as the last claim named it. */
  readonly claimedRef: RunRef | null;
}

/** Storage writes, issued together (no await between them, so they commit as one batch). */
export interface Writes {
  /** Set the alarm to this time (ms); null: delete it; absent: leave it. */
  readonly alarmAtMs?: number | null;
  /** Put the stored key; absent: leave it. */
  readonly key?: StoredLease;
  /** Delete everything: the key and the alarm, with one `deleteAll()`. */
  readonly clear?: true;
}

/** A call's answer, the state after it, and what to write. */
export interface Decision<Result> {
  readonly result: Result;
  readonly next: LeaseState;
  readonly writes: Writes;
}

/** What the alarm does after its key (if any) is written. */
export type AlarmStep =
  /** Settled or reset by this instance: nothing to watch, no new alarm. */
  | { readonly kind: "idle" }
  /** The configuration is invalid: the delivery waits for it to be fixed, the alarm must not die. */
  | { readonly kind: "config_invalid"; readonly alarmAtMs: number }
  /** The current lease (renewed, or granted since) is alive: wait for its end. */
  | { readonly kind: "wait"; readonly alarmAtMs: number }
  /** Nobody is working on it and nothing says which delivery it is: the sweeper re-enqueues it. */
  | { readonly kind: "unknown_delivery" }
  /** Put the delivery back on the queue after `delaySeconds`, then check again at `alarmAtMs`. */
  | { readonly kind: "requeue"; readonly ref: RunRef; readonly delaySeconds: number; readonly alarmAtMs: number };

/** What the alarm decided: the state after it, a key to store, and what to do next. */
export interface AlarmDecision {
  readonly next: LeaseState;
  /** Put first, and awaited, before the step. */
  readonly key?: StoredLease;
  readonly step: AlarmStep;
}
