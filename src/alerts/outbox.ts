/**
 * The outbox's retry policy: a message a channel did not take is tried again, later each time,
 * until it gets through or is too old to matter. A channel that is down loses no incident: the
 * dashboard shows each message's state, delivered or not.
 */

/** The first retry waits this long; each next one twice as long. */
export const FIRST_RETRY_MS = 15_000;
/** No wait longer than this between tries. */
export const MAX_RETRY_WAIT_MS = 30 * 60_000;
/** A message not delivered this long after it was made is given up (marked failed). */
export const GIVE_UP_AFTER_MS = 3 * 86_400_000;
/** A message being sent is claimed for this long: another beat leaves it alone meanwhile. */
export const CLAIM_MS = 120_000;

/**
 * When to try a message again after its `attempts`-th failed try at `nowMs`, or null to give up.
 * @example
 * nextTryMs(1, createdAt, now); // now + 15 s
 * nextTryMs(3, createdAt, now); // now + 1 min
 */
export function nextTryMs(attempts: number, createdAtMs: number, nowMs: number): number | null {
  if (nowMs - createdAtMs >= GIVE_UP_AFTER_MS) return null;
  return nowMs + Math.min(MAX_RETRY_WAIT_MS, FIRST_RETRY_MS * 2 ** Math.max(0, attempts - 1));
}
