/** Timestamps as stored in D1: ISO-8601 UTC with milliseconds, which sort as text. */
export function isoTime(epochMs: number): string {
  return new Date(epochMs).toISOString();
}
