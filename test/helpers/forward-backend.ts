/**
 * The forwarding tests' backend (test/setup/forward-backend.mjs, a real HTTP server in Node),
 * seen from the Workers runtime: plan a path's answers, read back what it received.
 */
import { inject } from "vitest";

declare module "vitest" {
  export interface ProvidedContext {
    forwardBackendUrl: string;
  }
}

/** One planned answer. */
export interface BackendStep {
  readonly status: number;
  readonly headers?: Record<string, string>;
  readonly body?: string;
  readonly delayMs?: number;
}

/** A request the backend received. */
export interface BackendCall {
  readonly method: string;
  readonly url: string;
  /** Node's view: names lower-cased. */
  readonly headers: Record<string, string>;
  /** The body, base64. */
  readonly body: string;
}

/** The absolute URL of `path` on the backend. */
export function backendUrl(path: string): string {
  return `${inject("forwardBackendUrl")}${path}`;
}

/** Plans the answers of `path` (the n-th request gets the n-th step, the last repeats) and forgets its calls. */
export async function planBackend(path: string, ...steps: BackendStep[]): Promise<string> {
  const response = await fetch(`${inject("forwardBackendUrl")}/__plan?path=${encodeURIComponent(path)}`, { method: "POST", body: JSON.stringify({ steps }) });
  await response.arrayBuffer();
  return backendUrl(path);
}

/** What `path` received, and the most requests it had in flight at once. */
export async function backendCalls(path: string): Promise<{ calls: BackendCall[]; maxInFlight: number }> {
  const response = await fetch(`${inject("forwardBackendUrl")}/__calls?path=${encodeURIComponent(path)}`);
  return response.json();
}

/** A base64 body as bytes. */
export function bytesOf(base64: string): Uint8Array {
  return Uint8Array.from(atob(base64), (char) => char.charCodeAt(0));
}

/** The Standard Webhooks secret the forwarding tests sign with (not the source's webhook secret). */
export const FORWARD_SECRET = "whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD";

/** Env overrides that forward every delivery of `source` to `url`, plus any `extra` vars. */
export function forwardingTo(source: string, url: string, extra: Record<string, string> = {}): Partial<Env> {
  const prefix = source.toUpperCase().replaceAll("-", "_");
  return { [`${prefix}_FORWARD_URL`]: url, [`${prefix}_FORWARD_SECRET`]: FORWARD_SECRET, ...extra } as Partial<Env>;
}
