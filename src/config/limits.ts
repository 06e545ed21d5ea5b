/**
 * The limits that more than one setting is checked against, each written once, and the one reader
 * of "a whole number in range" that every var and option goes through.
 */

/** A consumer invocation may run 15 minutes of wall clock; 840 s leaves a minute to record results. */
export const MAX_HANDLER_TIMEOUT_SECONDS = 840;

/**
 * The largest MAX_BODY_BYTES accepted: D1 caps a row at 2 MB, and this leaves room for the other
 * columns. Also the bound on a stored body's decompression (store/body-encoding.ts): whatever
 * MAX_BODY_BYTES is now, no body stored under any setting is larger.
 */
export const MAX_BODY_BYTES_CEILING = 1_900_000;

/** Queues refuses a delay (send or retry) longer than 12 hours. */
export const QUEUE_MAX_DELAY_SECONDS = 43_200;

/**
 * The wait before the last attempt, RETRY_BASE_SECONDS · 2^(MAX_ATTEMPTS−2): the longest backoff.
 * @example
 * longestBackoffSeconds(2, 5); // 16
 */
export function longestBackoffSeconds(retryBaseSeconds: number, maxAttempts: number): number {
  return retryBaseSeconds * 2 ** Math.max(0, maxAttempts - 2);
}

/**
 * A var's text as a whole number from `min` to `max` (surrounding spaces allowed), or null.
 * @example
 * parseWholeNumber(" 30 ", 1, 840); // 30
 * parseWholeNumber("3.5", 1, 840); // null
 */
export function parseWholeNumber(text: string, min: number, max: number): number | null {
  const trimmed = text.trim();
  if (!/^\d+$/.test(trimmed)) return null;
  const value = Number(trimmed);
  return value >= min && value <= max ? value : null;
}

/** What is wrong with a whole-number setting, in words (never its value). */
export function wholeNumberRange(min: number, max: number): string {
  return `must be a whole number from ${min} to ${max}`;
}

/** A problem when `value` (an option given in code) is not a whole number from `min` to `max`, else null. */
export function wholeNumberProblem(value: number, min: number, max: number): string | null {
  return Number.isInteger(value) && value >= min && value <= max ? null : wholeNumberRange(min, max);
}
