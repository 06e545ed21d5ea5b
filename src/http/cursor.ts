/**
 * The listing's opaque cursor: base64url of `[receivedAt, source, id]`, the last row's sort key.
 * Shared by the admin API's list (http/admin) and the dashboard's (http/ui).
 *
 * Opaque on purpose: clients pass it back unchanged, so the sort key can change without breaking
 * them. It is not a secret and not signed; a forged cursor only moves the page boundary.
 */
import type { ListingKey } from "../store";

/**
 * @example
 * encodeCursor({ receivedAt: "2026-12-03T07:41:45.123Z", source: "stripe", id: "evt_1" }); // "WyIyMDI2…"
 */
export function encodeCursor(key: ListingKey): string {
  const bytes = new TextEncoder().encode(JSON.stringify([key.receivedAt, key.source, key.id]));
  return btoa(String.fromCharCode(...bytes)).replaceAll("+", "-").replaceAll("/", "_").replace(/=+$/, "");
}

/** The key inside a cursor, or null when it is not one this API issued. */
export function decodeCursor(cursor: string): ListingKey | null {
  if (!/^[A-Za-z0-9_-]+$/.test(cursor)) return null;
  try {
    const binary = atob(cursor.replaceAll("-", "+").replaceAll("_", "/"));
    const text = new TextDecoder("utf-8", { fatal: true, ignoreBOM: false }).decode(Uint8Array.from(binary, (char) => char.charCodeAt(0)));
    const parsed: unknown = JSON.parse(text);
    if (!Array.isArray(parsed) || parsed.length !== 3 || !parsed.every((part) => typeof part === "string")) return null;
    const [receivedAt, source, id] = parsed as [string, string, string];
    return { receivedAt, source, id };
  } catch {
    return null;
  }
}
