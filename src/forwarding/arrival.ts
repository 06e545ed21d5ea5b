/**
 * Order of arrival for a destination's backlog, as pure decisions over plain data (kept by the
 * limiter object, limiter.ts). A delivery told to wait because of the breaker (open, or a probe in
 * flight), or whose failure opened it, is registered with when it was received (`ctx.receivedAt`),
 * and so is every delivery refused a slot while such a backlog drains; a turn then goes to a delivery only when no older
 * registered one is still waiting. So a backlog that built up while the destination was down reaches
 * it oldest first, as fast as its concurrency limit allows, while the usual contention for slots
 * (no outage) is left unordered and costs no extra wait.
 *
 * Bounded: an entry expires a little after the delivery was due back (`untilMs` + ARRIVAL_GRACE_MS,
 * renewed each time it is told to wait again): one that never comes back (settled elsewhere, its
 * message lost) holds nobody up for long. At most MAX_WAITING entries: when full, the newest
 * gives way to an older one, since the oldest are the ones whose order matters first. Kept in
 * memory only: an object evicted mid-backlog forgets the order, never a delivery.
 */

/** One waiting delivery. */
export interface Waiting {
  readonly receivedAtMs: number;
  readonly expiresAtMs: number;
}

/** Waiter (the delivery's key) → its entry. */
export type Backlog = Map<string, Waiting>;

export const ARRIVAL_GRACE_MS = 60_000;
export const MAX_WAITING = 10_000;
/** How long a delivery waits for an older one to take its turn first. */
export const ORDER_WAIT_SECONDS = 1;

/** Drops the entries that expired. */
export function prune(backlog: Backlog, nowMs: number): void {
  for (const [waiter, entry] of backlog) if (entry.expiresAtMs <= nowMs) backlog.delete(waiter);
}

/** Whether a delivery received before `receivedAtMs`, other than `waiter`, is still waiting (expired entries ignored). */
export function olderWaiting(backlog: Backlog, waiter: string, receivedAtMs: number, nowMs: number): boolean {
  for (const [other, entry] of backlog) {
    if (other !== waiter && entry.expiresAtMs > nowMs && entry.receivedAtMs < receivedAtMs) return true;
  }
  return false;
}

/** Registers (or renews) `waiter`, due back at `untilMs`; when full, the newest entry gives way to an older one. */
export function register(backlog: Backlog, waiter: string, receivedAtMs: number, untilMs: number): void {
  const entry = { receivedAtMs, expiresAtMs: untilMs + ARRIVAL_GRACE_MS };
  if (backlog.has(waiter) || backlog.size < MAX_WAITING) {
    backlog.set(waiter, entry);
    return;
  }
  let newest: [string, Waiting] | null = null;
  for (const pair of backlog) if (newest === null || pair[1].receivedAtMs > newest[1].receivedAtMs) newest = pair;
  if (newest !== null && newest[1].receivedAtMs > receivedAtMs) {
    backlog.delete(newest[0]);
    backlog.set(waiter, entry);
  }
}

/** `receivedAt` (ISO text) in ms, or null when absent or unreadable (such a delivery is not ordered). */
export function receivedAtMs(receivedAt: string | undefined): number | null {
  if (receivedAt === undefined) return null;
  const ms = Date.parse(receivedAt);
  return Number.isNaN(ms) ? null : ms;
}
