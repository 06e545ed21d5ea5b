/** Calls the admin API through the worker's own fetch handler, with the test admin token by default. */
import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env, exports } from "cloudflare:workers";
import { app } from "../../../src/http/app";
import { BASE_URL } from "../../helpers/signers";

export interface AdminReply {
  status: number;
  json: any;
  headers: Headers;
}

export interface AdminCall {
  method?: string;
  /** Sent as JSON. */
  body?: unknown;
  /** The bearer token; null sends no Authorization header. Defaults to the test ADMIN_TOKEN. */
  token?: string | null;
  headers?: Record<string, string>;
}

function adminRequestOf(path: string, call: AdminCall): Request {
  const headers: Record<string, string> = { ...call.headers };
  const token = call.token === undefined ? env.ADMIN_TOKEN : call.token;
  if (token !== null) headers.authorization = `Bearer ${token}`;
  if (call.body !== undefined) headers["content-type"] = "application/json";
  return new Request(`${BASE_URL}/admin${path}`, {
    method: call.method ?? (call.body === undefined ? "GET" : "POST"),
    headers,
    body: call.body === undefined ? undefined : JSON.stringify(call.body),
  });
}

async function reply(response: Response): Promise<AdminReply> {
  return { status: response.status, json: await response.json(), headers: response.headers };
}

/** `path` is relative to /admin, e.g. "/stats". */
export async function admin(path: string, call: AdminCall = {}): Promise<AdminReply> {
  return reply(await exports.default.fetch(adminRequestOf(path, call)));
}

/** The same, with bindings overridden (no ADMIN_TOKEN, a recording queue). */
export async function adminWithEnv(path: string, overrides: Record<string, unknown>, call: AdminCall = {}): Promise<AdminReply> {
  const ctx = createExecutionContext();
  const response = await app.fetch(adminRequestOf(path, call), { ...env, ...overrides } as Env, ctx);
  await waitOnExecutionContext(ctx);
  return reply(response);
}
