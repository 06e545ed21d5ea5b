/**
 * The dashboard links in a message: its filtered list of what an incident is about, and the
 * incident's page. Absolute only with PUBLIC_BASE_URL (the sweeper has no request to take a host
 * from); without it a message carries none. The paths are the dashboard's (src/http/ui/links.ts).
 */
import type { RuleName } from "./condition";

/** The dashboard's list for an incident of `rule` about `source` (and the subscriber that failed, when named). */
export function listPath(rule: RuleName, source: string | null, subscriber: string | null = null): string {
  const params = new URLSearchParams();
  if (rule === "delivery_failed" || rule === "failure_rate") params.set("status", "failed");
  if (rule === "backlog_age" || (rule === "heartbeat" && source === null)) params.set("status", "received");
  if (source !== null && rule !== "signature_failures") params.set("source", source);
  if (subscriber !== null && (rule === "delivery_failed" || rule === "failure_rate")) params.set("subscriber", subscriber);
  const query = params.toString();
  if (rule === "signature_failures" || rule === "breaker_open" || rule === "database_size") return "/ui/incidents";
  return `/ui/deliveries${query ? `?${query}` : ""}`;
}

export function incidentPath(id: number): string {
  return `/ui/incidents/${id}`;
}

/** `path` on the dashboard at `baseUrl`, or null without one. */
export function absolute(baseUrl: string | undefined, path: string): string | null {
  return baseUrl ? `${baseUrl.replace(/\/+$/, "")}${path}` : null;
}
