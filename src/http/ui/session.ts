/**
 * The dashboard's session: a cookie that says "signed in until T", signed with a key derived
 * from ADMIN_TOKEN.
 *
 * Stateless on purpose: nothing is stored per session, so there is no session table to prune or
 * leak. The signing key is HMAC-SHA-256(ADMIN_TOKEN, SESSION_KEY_LABEL): the cookie reveals
 * nothing about the token, and rotating the token (`wrangler secret put ADMIN_TOKEN`) ends every
 * session at once. The expiry is inside the signed value, so a kept cookie dies after
 * SESSION_SECONDS whatever the browser does with its Max-Age.
 */
import type { Context } from "hono";
import { deleteCookie, getCookie, setCookie } from "hono/cookie";

/** How long a sign-in lasts. */
export const SESSION_SECONDS = 12 * 60 * 60;

/** The fixed label the session key is derived under; a new label ends every session too. */
const SESSION_KEY_LABEL = "webhook-inbox dashboard session v1";

/**
 * The cookie's name. Over https it carries the `__Secure-` prefix, which browsers accept only
 * with `Secure` (http on localhost cannot set that, hence the plain name there).
 */
export function sessionCookieName(c: Context): string {
  return isHttps(c) ? "__Secure-inbox_session" : "inbox_session";
}

function isHttps(c: Context): boolean {
  return new URL(c.req.url).protocol === "https:";
}

const encoder = new TextEncoder();

/** One derived key per token: a rotation gets a new entry, the old one is never used again. */
let cachedKey: { token: string; key: Promise<CryptoKey> } | undefined;

function sessionKey(adminToken: string): Promise<CryptoKey> {
  if (cachedKey?.token !== adminToken) cachedKey = { token: adminToken, key: deriveSessionKey(adminToken) };
  return cachedKey.key;
}

async function deriveSessionKey(adminToken: string): Promise<CryptoKey> {
  const tokenKey = await crypto.subtle.importKey("raw", encoder.encode(adminToken), { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
  const derived = await crypto.subtle.sign("HMAC", tokenKey, encoder.encode(SESSION_KEY_LABEL));
  return crypto.subtle.importKey("raw", derived, { name: "HMAC", hash: "SHA-256" }, false, ["sign", "verify"]);
}

function toBase64Url(bytes: ArrayBuffer): string {
  return btoa(String.fromCharCode(...new Uint8Array(bytes))).replaceAll("+", "-").replaceAll("/", "_").replace(/=+$/, "");
}

function fromBase64Url(text: string): Uint8Array | null {
  if (!/^[A-Za-z0-9_-]+$/.test(text)) return null;
  try {
    return Uint8Array.from(atob(text.replaceAll("-", "+").replaceAll("_", "/")), (char) => char.charCodeAt(0));
  } catch {
    return null;
  }
}

/** What is signed: a version and the expiry, so a value of another kind can never pass as one. */
function signedPart(expiresAtSeconds: number): string {
  return `v1.${expiresAtSeconds}`;
}

/**
 * A session value that expires SESSION_SECONDS after `nowMs`: `v1.<expiry>.<mac>`.
 * @example
 * const value = await createSessionValue(config.adminToken, Date.now());
 */
export async function createSessionValue(adminToken: string, nowMs: number): Promise<string> {
  const part = signedPart(Math.floor(nowMs / 1000) + SESSION_SECONDS);
  const mac = await crypto.subtle.sign("HMAC", await sessionKey(adminToken), encoder.encode(part));
  return `${part}.${toBase64Url(mac)}`;
}

/**
 * Whether `value` is a session this token signed that has not expired. The MAC is checked by
 * `crypto.subtle.verify`, in constant time: a timing leak would let a forger guess it byte by byte.
 */
export async function isValidSession(value: string | undefined, adminToken: string, nowMs: number): Promise<boolean> {
  if (value === undefined || value.length > 200) return false;
  const match = /^(v1\.(\d{1,12}))\.([A-Za-z0-9_-]+)$/.exec(value);
  if (!match) return false;
  const [, part, expiry, macText] = match as unknown as [string, string, string, string];
  const mac = fromBase64Url(macText);
  if (mac === null) return false;
  const valid = await crypto.subtle.verify("HMAC", await sessionKey(adminToken), mac, encoder.encode(part));
  const expiresAtSeconds = Number(expiry);
  // Also refuse an expiry further out than a session lasts: only a forger could have made one.
  return valid && expiresAtSeconds * 1000 > nowMs && expiresAtSeconds * 1000 <= nowMs + SESSION_SECONDS * 1000;
}

/** Sets the session cookie: HttpOnly, SameSite=Lax, Secure over https, sent to /ui only (never to /admin). */
export async function startSession(c: Context, adminToken: string, nowMs: number): Promise<void> {
  setCookie(c, sessionCookieName(c), await createSessionValue(adminToken, nowMs), {
    path: "/ui",
    httpOnly: true,
    sameSite: "Lax",
    secure: isHttps(c),
    maxAge: SESSION_SECONDS,
  });
}

/** Whether the request carries a valid session for this token. */
export async function hasSession(c: Context, adminToken: string, nowMs: number): Promise<boolean> {
  return isValidSession(getCookie(c, sessionCookieName(c)), adminToken, nowMs);
}

/** Clears the session cookie in this browser (the value itself stays valid until it expires; rotate the token to end it everywhere). */
export function endSession(c: Context): void {
  deleteCookie(c, sessionCookieName(c), { path: "/ui", httpOnly: true, sameSite: "Lax", secure: isHttps(c) });
}
