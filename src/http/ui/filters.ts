/**
 * The list's filters as they arrive in a query string (or a form), checked: each bad value is
 * named in `problems` and left out, so a page still renders and says what it could not use.
 */
import { SOURCES } from "../../sources";
import { SUBSCRIBER_NAME } from "../../handler-api/registry";
import { DELIVERY_STATUSES, type DeliveryStatus, type ListingKey } from "../../store";
import { decodeCursor } from "../cursor";
import { MAX_DELIVERY_ID_LENGTH } from "../receiver";
import type { ListFilter } from "./links";

export interface ParsedFilter {
  readonly filter: ListFilter;
  /** The page's position (a cursor of the admin API's kind), when one was given and is valid. */
  readonly after: ListingKey | undefined;
  readonly cursor: string | undefined;
  /** A delivery id to look up (within `filter.source`, or across every configured source). */
  readonly id: string | undefined;
  /** What was wrong, one sentence per field, for the page to show. */
  readonly problems: readonly string[];
}

const MAX_TEXT = 255;

/**
 * Reads `status`, `source`, `subscriber`, `eventType`, `since`, `until`, `unhandled` (1), `cursor` and `id`.
 * @example
 * parseFilter(new URLSearchParams("status=failed&since=2026-12-03")).filter;
 * // { status: "failed", since: "2026-12-03T00:00:00.000Z" }
 */
export function parseFilter(params: URLSearchParams): ParsedFilter {
  const problems: string[] = [];
  const text = (name: string) => {
    const value = withoutNul(params.get(name))?.trim();
    if (!value) return undefined;
    if (value.length > MAX_TEXT) {
      problems.push(`${name}: longer than ${MAX_TEXT} characters`);
      return undefined;
    }
    return value;
  };
  const statusText = text("status");
  let status: DeliveryStatus | undefined;
  if (statusText !== undefined) {
    if ((DELIVERY_STATUSES as readonly string[]).includes(statusText)) status = statusText as DeliveryStatus;
    else problems.push(`status: not one of ${DELIVERY_STATUSES.join(", ")}`);
  }
  const time = (name: string, label: string) => {
    const value = text(name);
    if (value === undefined) return undefined;
    const iso = parseUtcTime(value);
    if (iso === null) problems.push(`${label}: not a time (write it in UTC, e.g. 2026-12-03T07:00)`);
    return iso ?? undefined;
  };
  const since = time("since", "received since");
  const until = time("until", "received until");
  const subscriberText = text("subscriber");
  const subscriber = subscriberText !== undefined && SUBSCRIBER_NAME.test(subscriberText) ? subscriberText : undefined;
  if (subscriberText !== undefined && subscriber === undefined) problems.push("subscriber: not a subscriber's name (lower-case letters, digits, - and _)");
  const cursorText = text("cursor");
  const after = cursorText === undefined ? undefined : (decodeCursor(cursorText) ?? undefined);
  if (cursorText !== undefined && after === undefined) problems.push("cursor: not a page position this dashboard made; showing the first page");
  const id = withoutNul(params.get("id"))?.trim() || undefined;
  if (id !== undefined && id.length > MAX_DELIVERY_ID_LENGTH) problems.push(`id: longer than ${MAX_DELIVERY_ID_LENGTH} characters`);
  return {
    filter: { status, source: text("source"), subscriber, eventType: text("eventType"), since, until, unhandled: params.get("unhandled") === "1" || undefined },
    after,
    cursor: after === undefined ? undefined : cursorText,
    id: id !== undefined && id.length <= MAX_DELIVERY_ID_LENGTH ? id : undefined,
    problems,
  };
}

const UTC_TIME = /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,3}))?)?)?\s*(?:Z|UTC|\+00:?00)?$/i;

/**
 * A time written by a person or a link, read as UTC: `2026-12-03`, `2026-12-03T07:00`,
 * `2026-12-03 07:00:30`, `2026-12-03T07:00:30.123Z`. The stored form (ISO with milliseconds) or
 * null when it is not a real time.
 */
export function parseUtcTime(value: string): string | null {
  const match = UTC_TIME.exec(value.trim());
  if (!match) return null;
  const [, year, month, day, hour = "0", minute = "0", second = "0", fraction = "0"] = match;
  const ms = Date.UTC(Number(year), Number(month) - 1, Number(day), Number(hour), Number(minute), Number(second), Number(fraction.padEnd(3, "0")));
  const date = new Date(ms);
  // Date.UTC rolls 2026-02-31 over into March: a date it changed was not a real one.
  const fields = [date.getUTCFullYear(), date.getUTCMonth() + 1, date.getUTCDate(), date.getUTCHours(), date.getUTCMinutes(), date.getUTCSeconds()];
  if (Number.isNaN(ms) || fields.join() !== [year, month, day, hour, minute, second].map(Number).join()) return null;
  return date.toISOString();
}

/** The configured sources, and `current` too when it is not one (a source removed since). */
export function sourceChoices(current: string | undefined): string[] {
  const names = Object.keys(SOURCES);
  return current !== undefined && !names.includes(current) ? [...names, current] : names;
}

/**
 * A query parameter without NUL characters: no stored id or event type holds one (the receiver
 * refuses such ids), and Postgres cannot even compare text holding one (an error, not a miss).
 */
function withoutNul(value: string | null): string | undefined {
  return value?.replaceAll("\u0000", "");
}
