/**
 * The rules of a delivery's lease, as pure functions on plain data: what each call of the
 * DeliveryLease object (object.ts) answers, what the instance knows after it, and what it writes
 * (the alarm, the stored key). No I/O here; the object loads, decides, and applies.
 *
 * - `claim` hands out a lease with a fresh fencing token, or says the delivery is busy or settled.
 *   Two workers never hold the same delivery.
 * - The lease is held by the object's one alarm. The worker extends it with `renew` while it works;
 *   when the alarm fires and the lease has passed without a word from its holder, the holder is
 *   presumed dead: the delivery goes back on the queue and the next claim takes over
 *   (`takeover: true`, which the consumer's crash-loop check needs).
 * - `release` (a retry is due, or processing hit an infrastructure error) and `settle` (done or
 *   failed) are refused for a stale token, so a worker whose lease ran out cannot overwrite the work
 *   of the worker that took over. The same token fences the handler's D1 commit (migrations/0006:
 *   `deliveries_lease_fence`), which is the last word: once a takeover is recorded there (before its
 *   handler runs), the worker it took over from commits nothing; until then the first result to land
 *   wins, and any later one is refused.
 * - Attempts are not counted here: D1 counts a run when it ends, or when a takeover finds it vanished
 *   (store/d1/lifecycle.ts `markTakeover`, told the vanished holder's token), so a claim whose
 *   processing met an infrastructure error (D1 or the object browning out) uses up nothing.
 * - A settled delivery leaves no key behind: `settle` removes the stored key, if a rare path wrote
 *   one. On the hot path (the store records the run done: `finished`) it writes nothing and leaves
 *   the lease's alarm to fire: a storage write saved per delivery for an alarm's request. That alarm
 *   finds the lease settled, or, on an instance evicted since, asks the store, which says the run is
 *   done (object.ts), and does nothing. Any other settle (failed; a fanned-out delivery, whose row
 *   stays unfinished) removes the alarm. A late duplicate message then meets the D1 row, which
 *   judges what is done.
 *
 * A fresh instance (after an eviction) reads the key and the alarm once (`loadLease`):
 * - a key: the lease as it says (held until the alarm, released, or abandoned);
 * - no key, no alarm: never claimed, or settled (its alarm deleted, or fired): the claim is granted,
 *   no takeover;
 * - no key, an alarm: a lease of the hot path whose token went with the evicted instance, or the
 *   alarm a `finished` settle left (the two cannot be told apart without the store). While its
 *   alarm is ahead, somebody may be at work: a claim is busy (a duplicate of a done delivery is
 *   acked; a replay whose lease reset failed waits for the alarm, which asks the store), and the holder's `renew`, `release` or
 *   `settle` is taken as coming from that holder (it adopts the lease). That is safe because the hot
 *   path never leaves two workers with live tokens: a second token is only ever issued by a takeover,
 *   after a release or after a reset, and each of those stores it, so a key (not this case) then tells
 *   the tokens apart. (A stalled worker of before a settle could still adopt the lease of a later
 *   duplicate message this way; that delivery is done or failed in D1, and the D1 fence refuses its
 *   writes, so it changes nothing.) When the alarm fires, the holder never said a word for a whole
 *   lease: the alarm abandons the lease and stores a floor for the tokens, the time it fired, above
 *   any token handed out before (tokens start from the clock, and that lease ended at least one lease
 *   after its token was issued).
 */
import type { RunRef } from "../messages";
import type { AlarmDecision, Decision, LeaseClaim, LeaseState, Naming } from "./state";
import type { StoredLease } from "./stored";

export type { AlarmDecision, AlarmStep, Decision, Lease, LeaseClaim, LeaseState, Naming, Writes } from "./state";

/** How long an alarm waits to try again while the configuration is invalid. */
export const CONFIG_RETRY_MS = 60_000;

/** The state of a fresh instance, from the stored key (`fromStorage`) and the alarm it read. */
export function loadLease(stored: StoredLease | null, alarmAtMs: number | null): LeaseState {
  if (!stored) {
    const lease = alarmAtMs === null ? null : { token: null, heldUntilMs: alarmAtMs, abandoned: false };
    return { lease, stored: null, lastToken: 0, settledAtMs: null };
  }
  // A held lease ends at its alarm; none (this is the alarm, running): it has ended.
  const heldUntilMs = stored.state === "released" ? null : (alarmAtMs ?? 0);
  const lease = { token: stored.floor ? null : stored.token, heldUntilMs, abandoned: stored.state === "abandoned" };
  return { lease, stored, lastToken: stored.token, settledAtMs: null };
}

/** Claims the delivery for one attempt at `nowMs`; `naming.claimedRef` is the claim's delivery. */
export function decideClaim(state: LeaseState, naming: Naming, nowMs: number, leaseMs: number): Decision<LeaseClaim> {
  const { lease } = state;
  if (!lease && state.settledAtMs !== null && nowMs - state.settledAtMs < leaseMs) return unchanged(state, { kind: "settled" });
  if (lease?.heldUntilMs != null && !lease.abandoned && nowMs < lease.heldUntilMs) {
    // Also a lease found after an eviction with only its alarm left: its holder may be at work.
    return unchanged(state, { kind: "busy", leasedUntilMs: lease.heldUntilMs });
  }
  // The previous holder vanished (alarm fired, or its lease passed before the alarm could run).
  const takeover = lease !== null && (lease.abandoned || (lease.heldUntilMs !== null && nowMs >= lease.heldUntilMs));
  // Tokens only grow, even across a reset, a settled-then-replayed delivery or an eviction: they
  // start from the clock, so a token issued before the memory or storage was wiped can never be
  // reissued (an orphaned lease's token is at least a lease older than its alarm).
  const token = Math.max(state.lastToken + 1, (lease?.token ?? 0) + 1, nowMs);
  const heldUntilMs = nowMs + leaseMs;
  // The hot path writes the alarm alone. A takeover leaves the older holder possibly at work, and a
  // stored key must never say "released" or "abandoned" while a holder works: then the new token is
  // stored, so that a fresh instance can still refuse the older one.
  const store = takeover || state.stored !== null || naming.namedRef === null;
  const key: StoredLease | undefined = store ? { token, state: "held", ...refToStore(state, naming) } : undefined;
  return {
    result: { kind: "granted", token, takeover, previousToken: takeover ? (lease.token ?? 0) : 0 },
    next: { lease: { token, heldUntilMs, abandoned: false }, stored: key ?? state.stored, lastToken: Math.max(state.lastToken, token), settledAtMs: null },
    writes: { alarmAtMs: heldUntilMs, ...(key ? { key } : {}) },
  };
}

/**
 * Extends the lease of a worker still at work by one lease period from `nowMs`; false when `token`
 * is no longer the lease (another worker took over, or it was settled). `leaseMs` null: the
 * configuration is invalid; then a call that would extend the lease fails (null), one that is
 * refused is still refused.
 */
export function decideRenew(state: LeaseState, naming: Naming, token: number, nowMs: number, leaseMs: number | null): Decision<boolean> | null {
  const { lease, stored } = state;
  if (!lease || lease.heldUntilMs === null) return unchanged(state, false);
  // A null token: the instance was evicted while its holder worked; this is that holder (see the
  // top of this file), and it adopts the lease.
  if (lease.token !== null && lease.token !== token) return unchanged(state, false);
  if (leaseMs === null) return null;
  // Also after the alarm marked it abandoned: nobody took over yet, and the requeued message will
  // find it busy again.
  const heldUntilMs = nowMs + leaseMs;
  // One write, the alarm; the stored key is rewritten only if it says "abandoned".
  // A floor gives way to the holder's own token (it is no longer unknown).
  const key: StoredLease | undefined = stored !== null && (stored.state !== "held" || stored.floor) ? { token, state: "held", ...refToStore(state, naming) } : undefined;
  return {
    result: true,
    next: { ...state, lease: { token, heldUntilMs, abandoned: false }, stored: key ?? stored, lastToken: Math.max(state.lastToken, token) },
    writes: { alarmAtMs: heldUntilMs, ...(key ? { key } : {}) },
  };
}

/**
 * Gives the lease back: a retry is due at `retryAtMs`. The alarm is kept as a safety net at
 * `retryAtMs` + one lease: if the queued retry is lost, the alarm puts the delivery back on the
 * queue. False for a stale token; `leaseMs` null as for `decideRenew`.
 */
export function decideRelease(state: LeaseState, naming: Naming, token: number, retryAtMs: number, leaseMs: number | null): Decision<boolean> | null {
  const { lease } = state;
  if (!lease || (lease.token !== null && lease.token !== token)) return unchanged(state, false);
  if (leaseMs === null) return null;
  // Stored (a rare path): after an eviction the safety alarm alone would read as a lease still
  // held, and the retry would meet "busy" until it fired.
  const key: StoredLease = { token, state: "released", ...refToStore(state, naming) };
  return {
    result: true,
    next: { ...state, lease: { token, heldUntilMs: null, abandoned: false }, stored: key, lastToken: Math.max(state.lastToken, token) },
    writes: { alarmAtMs: retryAtMs + leaseMs, key },
  };
}

/**
 * The delivery is done or failed: forget it (any stored key; the alarm unless `finished`). False for
 * a stale token. `finished`: the store records the run as done, so the alarm may stay and find it
 * so (see the top of this file).
 */
export function decideSettle(state: LeaseState, token: number, nowMs: number, finished = false): Decision<boolean> {
  const { lease } = state;
  // Nothing held: settled already (a late or repeated settle), or never claimed. Setting the
  // settled hint now could turn a replay's message away; there is nothing to forget anyway.
  if (!lease) return unchanged(state, true);
  if (lease.token !== null && lease.token !== token) return unchanged(state, false);
  // No write on the hot path (the alarm stays), else one. deleteAll() removes the alarm too:
  // compatibility_date ≥ 2026-02-24 (wrangler.toml).
  return {
    result: true,
    next: { ...state, lease: null, stored: null, settledAtMs: nowMs },
    writes: state.stored ? { clear: true } : finished ? {} : { alarmAtMs: null },
  };
}

/**
 * Admin replay: start over. The alarm goes; the key keeps a floor above every token handed out so
 * far (a rare path), so that a worker of before the replay is refused by a fresh instance too.
 */
export function decideReset(state: LeaseState, naming: Naming, nowMs: number): Decision<void> {
  const token = Math.max(state.lastToken, nowMs);
  const key: StoredLease = { token, state: "released", ...refToStore(state, naming) };
  return {
    result: undefined,
    next: { lease: { token, heldUntilMs: null, abandoned: false }, stored: key, lastToken: token, settledAtMs: null },
    writes: { key, alarmAtMs: null },
  };
}

/**
 * The lease ran out (or a released delivery's retry never came). Either way nobody is working on
 * it: put it back on the queue after `delaySeconds` and check again one lease later, until it is
 * settled. `fresh`: this instance read storage for this alarm (it knew nothing before); `leaseMs`
 * null: the configuration is invalid.
 */
export function decideAlarm(state: LeaseState, naming: Naming, fresh: boolean, nowMs: number, leaseMs: number | null, delaySeconds: number): AlarmDecision {
  let next = state;
  let lease = state.lease;
  if (!lease) {
    if (!fresh) return { next, step: { kind: "idle" } };
    // A fresh instance with no key: this alarm is all that is left of a lease of the hot path
    // (getAlarm() reads null while the alarm runs). It fired: that lease has ended. Kept in memory,
    // so that a claim before the next alarm (an invalid configuration's) takes over, and that next
    // alarm still watches it.
    lease = { token: null, heldUntilMs: 0, abandoned: false };
    next = { ...state, lease };
  }
  if (leaseMs === null) return { next, step: { kind: "config_invalid", alarmAtMs: nowMs + CONFIG_RETRY_MS } };
  // This alarm was scheduled for an earlier lease; the current one is alive: do not abandon it.
  if (lease.heldUntilMs !== null && nowMs < lease.heldUntilMs) return { next, step: { kind: "wait", alarmAtMs: lease.heldUntilMs } };
  let key: StoredLease | undefined;
  if (lease.heldUntilMs !== null && !lease.abandoned) {
    // Stored (a rare path: its holder died), so that the requeued message's claim takes over even
    // after an eviction. A lost token is replaced by a floor: every token issued before is older
    // than this lease's end, which is now at the latest. The floor is not a holder's token: the
    // lease keeps null (unknown holder) in memory.
    const token = lease.token ?? Math.max(next.lastToken, nowMs);
    key = { token, state: "abandoned", ...(lease.token === null ? { floor: true as const } : {}), ...refToStore(next, naming) };
    next = { ...next, lease: { ...lease, abandoned: true }, stored: key, lastToken: Math.max(next.lastToken, token) };
  }
  const ref = deliveryOf(next, naming);
  // No name and nothing stored to say which delivery this is (it cannot happen with a name up to
  // 1,024 bytes, stored.ts). No new alarm: it could requeue nothing either.
  if (!ref) return { next, ...(key ? { key } : {}), step: { kind: "unknown_delivery" } };
  // At-least-once: a duplicate message is harmless, the next claim sorts it out. The D1 row judges
  // whether there is anything left to do.
  return { next, ...(key ? { key } : {}), step: { kind: "requeue", ref, delaySeconds, alarmAtMs: nowMs + leaseMs + delaySeconds * 1000 } };
}

/** The delivery: the object's name, else what a claim stored or said. */
export function deliveryOf(state: LeaseState | undefined, naming: Naming): RunRef | null {
  return naming.namedRef ?? state?.stored?.ref ?? naming.claimedRef;
}

/** The delivery, for a stored key, when the object's name does not carry it. */
function refToStore(state: LeaseState, naming: Naming): { ref?: RunRef } {
  if (naming.namedRef) return {};
  const ref = state.stored?.ref ?? naming.claimedRef;
  return ref ? { ref } : {};
}

function unchanged<Result>(state: LeaseState, result: Result): Decision<Result> {
  return { result, next: state, writes: {} };
}
