/**
 * The dashboard's URLs, built in one place: every filtered view is a plain GET link, so it can be
 * bookmarked, shared and opened in a new tab. Ids and sources go through `encodeURIComponent`
 * (an id may hold `/`, `?`, `#` or anything else a provider sends).
 */
import type { DeliveryRef } from "../../processing/messages";
import type { DeliveryFilter } from "../../store";

/** The list filters a link can carry; every field optional. */
export type ListFilter = DeliveryFilter;

export const UI_HOME = "/ui";

/** `/ui/deliveries?…` with the given filters (empty ones left out), and a cursor for a later page. */
export function listHref(filter: ListFilter = {}, cursor?: string): string {
  return `${UI_HOME}/deliveries${query({ ...filterParams(filter), cursor })}`;
}

/** The filter as query parameters, in a stable order. */
export function filterParams(filter: ListFilter): Record<string, string | undefined> {
  return { status: filter.status, source: filter.source, subscriber: filter.subscriber, eventType: filter.eventType, since: filter.since, until: filter.until, unhandled: filter.unhandled ? "1" : undefined };
}

/** `?a=1&b=2` of the defined, non-empty values, or "" when there are none. */
export function query(params: Record<string, string | undefined>): string {
  const entries = Object.entries(params).filter((entry): entry is [string, string] => entry[1] !== undefined && entry[1] !== "");
  return entries.length === 0 ? "" : `?${new URLSearchParams(entries).toString()}`;
}

export function deliveryHref(ref: DeliveryRef, suffix = ""): string {
  return `${UI_HOME}/deliveries/${encodeURIComponent(ref.source)}/${encodeURIComponent(ref.id)}${suffix}`;
}

/** The bulk replay's confirmation page for failed deliveries matching `filter`. */
export function bulkReplayHref(filter: ListFilter): string {
  return `${UI_HOME}/replay${query({ ...filterParams({ ...filter, status: undefined }) })}`;
}
