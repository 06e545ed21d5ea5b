/**
 * The source filter at receipt (`<SOURCE>_FILTER`, docs/filters.md): whether a verified delivery
 * is kept out of processing, and why. Checked after verification (unverified input is never
 * stored, filtered or not) and before the store, which keeps a filtered delivery as `filtered`
 * with this reason so that duplicates are still recognised and a replay can run it.
 */
import { sourceFilterOf } from "../config/source-filters";
import type { InboxConfig } from "../config";
import { evaluateFilter } from "../filters";
import { filteredReason } from "../store";

/** The body as JSON for the filter's `body.*` fields; undefined when it is not JSON. */
function parsedBody(body: Uint8Array): unknown {
  try {
    return JSON.parse(new TextDecoder("utf-8", { fatal: true, ignoreBOM: false }).decode(body));
  } catch {
    return undefined;
  }
}

/**
 * Why the source's filter keeps this delivery out (the failed clause and the value seen), or null
 * when it has no filter or the delivery matches. The body is parsed only when there is a filter.
 * @example
 * const filtered = sourceFilterReason(config, "stripe", "customer.created", request.headers, body);
 * // 'filtered: type oneOf ["invoice.paid"]; saw "customer.created"'
 */
export function sourceFilterReason(config: InboxConfig, source: string, eventType: string | null, headers: Headers, body: Uint8Array): string | null {
  const filter = sourceFilterOf(config.sourceFilters, source);
  if (filter === undefined) return null;
  const verdict = evaluateFilter(filter, { eventType, header: (name) => headers.get(name), body: parsedBody(body) });
  return verdict.match ? null : filteredReason(verdict.clause, verdict.saw);
}
