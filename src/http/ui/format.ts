/** How the dashboard writes times, durations, sizes and long texts. Pure functions, no HTML. */

/** "2026-12-03 07:41:45 UTC" from an ISO time (the stored form, always UTC). */
export function utcText(iso: string): string {
  const ms = Date.parse(iso);
  if (Number.isNaN(ms)) return iso;
  return `${new Date(ms).toISOString().slice(0, 19).replace("T", " ")} UTC`;
}

/**
 * "just now", "42 s ago", "5 min ago", "3 h ago", "2 d ago" (or "in 5 min" for a time ahead).
 * The page's script keeps these current; this is what a page without script shows.
 * @example
 * relativeText("2026-12-03T07:40:00.000Z", Date.parse("2026-12-03T07:45:00.000Z")); // "5 min ago"
 */
export function relativeText(iso: string, nowMs: number): string {
  const ms = Date.parse(iso);
  if (Number.isNaN(ms)) return iso;
  const seconds = Math.round((nowMs - ms) / 1000);
  const span = durationText(Math.abs(seconds));
  if (Math.abs(seconds) < 5) return "just now";
  return seconds > 0 ? `${span} ago` : `in ${span}`;
}

/** "42 s", "5 min", "3 h", "2 d" (whole units, rounded down). */
export function durationText(seconds: number): string {
  if (seconds < 60) return `${Math.floor(seconds)} s`;
  if (seconds < 3_600) return `${Math.floor(seconds / 60)} min`;
  if (seconds < 86_400) return `${Math.floor(seconds / 3_600)} h`;
  return `${Math.floor(seconds / 86_400)} d`;
}

/** A run's duration: "850 ms", "2.4 s", "3 min". */
export function millisecondsText(ms: number): string {
  if (ms < 1_000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1_000).toFixed(1)} s`;
  return durationText(ms / 1_000);
}

/** "512 bytes", "3.4 KiB", "1.0 MiB". */
export function bytesText(bytes: number): string {
  if (bytes < 1_024) return `${bytes} byte${bytes === 1 ? "" : "s"}`;
  if (bytes < 1_048_576) return `${(bytes / 1_024).toFixed(1)} KiB`;
  return `${(bytes / 1_048_576).toFixed(1)} MiB`;
}

/** At most `max` characters, an ellipsis marking a cut (on code points, so no half emoji). */
export function shorten(text: string, max: number): string {
  const chars = Array.from(text);
  return chars.length <= max ? text : `${chars.slice(0, max - 1).join("")}…`;
}

/** "12.5 %" of a ratio (0–1), or "–" when there is none. */
export function percentText(ratio: number | null): string {
  if (ratio === null) return "–";
  const percent = ratio * 100;
  return `${percent < 10 && percent > 0 ? percent.toFixed(1) : Math.round(percent)} %`;
}
