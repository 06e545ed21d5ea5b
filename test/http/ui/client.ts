/** Calls the dashboard through the worker's own fetch handler, signed in by default, as a browser on the inbox's origin would. */
import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env, exports } from "cloudflare:workers";
import { app } from "../../../src/http/app";
import { createSessionValue } from "../../../src/http/ui/session";
import { BASE_URL } from "../../helpers/signers";

/** BASE_URL is https: the cookie carries the `__Secure-` prefix there. */
export const SESSION_COOKIE = "__Secure-inbox_session";

export interface UiReply {
  status: number;
  text: string;
  headers: Headers;
}

export interface UiCall {
  method?: string;
  /** Sent as an application/x-www-form-urlencoded body (a POST unless `method` says otherwise). */
  form?: Record<string, string>;
  /** The session cookie's value; null sends none. Defaults to a fresh session of the test ADMIN_TOKEN. */
  session?: string | null;
  /** Defaults, for a POST: `Origin: BASE_URL` (a form of the dashboard's own pages). */
  headers?: Record<string, string>;
  /** Bindings overridden for this call (e.g. no ADMIN_TOKEN). */
  env?: Record<string, unknown>;
}

/** A valid session value for the test ADMIN_TOKEN (or `token`). */
export function sessionFor(token = env.ADMIN_TOKEN, nowMs = Date.now()): Promise<string> {
  return createSessionValue(token, nowMs);
}

export async function uiRequest(path: string, call: UiCall = {}): Promise<Request> {
  const method = call.method ?? (call.form ? "POST" : "GET");
  const headers: Record<string, string> = {};
  if (method === "POST") headers.origin = BASE_URL;
  if (call.form) headers["content-type"] = "application/x-www-form-urlencoded";
  const session = call.session === undefined ? await sessionFor() : call.session;
  if (session !== null) headers.cookie = `${SESSION_COOKIE}=${session}`;
  Object.assign(headers, call.headers);
  return new Request(`${BASE_URL}${path}`, {
    method,
    headers,
    body: call.form ? new URLSearchParams(call.form).toString() : undefined,
    redirect: "manual",
  });
}

/** `path` is absolute, e.g. "/ui/deliveries". */
export async function ui(path: string, call: UiCall = {}): Promise<UiReply> {
  const request = await uiRequest(path, call);
  let response: Response;
  if (call.env) {
    const ctx = createExecutionContext();
    response = await app.fetch(request, { ...env, ...call.env } as Env, ctx);
    await waitOnExecutionContext(ctx);
  } else {
    response = await exports.default.fetch(request);
  }
  return { status: response.status, text: await response.text(), headers: response.headers };
}

/** The value of cookie `name` set by a response, with its attributes, or undefined. */
export function setCookie(headers: Headers, name: string): { value: string; attributes: string[] } | undefined {
  for (const line of headers.getSetCookie()) {
    const [pair, ...attributes] = line.split(";").map((part) => part.trim());
    const [cookieName, ...value] = pair!.split("=");
    if (cookieName === name) return { value: value.join("="), attributes };
  }
  return undefined;
}

/**
 * A client address of its own, so that sign-in attempts of one test do not count against another's:
 * a /64 of its own (the throttle counts an IPv6 address by its /64).
 */
export function clientAddress(): Record<string, string> {
  const group = () => Math.floor(Math.random() * 0x10000).toString(16);
  return { "cf-connecting-ip": `2001:db8:${group()}:${group()}::${group()}` };
}
