/**
 * What every admin route file builds on: an OpenAPIHono whose validation failures become the
 * inbox's one error shape (400 `bad_request`, thrown to `app.onError`), and the documented errors.
 */
import { OpenAPIHono, type Hook } from "@hono/zod-openapi";
import type { z } from "zod";
import { ApiError } from "../errors";
import type { AppEnv } from "../types";
import { ErrorSchema } from "./schemas";

/** Names each bad parameter and what is wrong with it; never echoes the values. */
function describeIssues(error: z.ZodError): string {
  return error.issues.map((issue) => `${issue.path.length > 0 ? issue.path.join(".") : "body"}: ${issue.message}`).join("; ");
}

const rejectInvalid: Hook<unknown, AppEnv, string, unknown> = (result) => {
  if (!result.success) throw new ApiError(400, "bad_request", describeIssues(result.error));
};

/**
 * A router for admin routes, validating with zod and documenting as it goes.
 * @example
 * export const statsRoutes = adminRouter().openapi(statsRoute, async (c) => c.json(stats, 200));
 */
export function adminRouter(): OpenAPIHono<AppEnv> {
  return new OpenAPIHono<AppEnv>({ defaultHook: rejectInvalid });
}

const ERROR_DESCRIPTIONS = {
  400: "bad parameters (`bad_request`)",
  401: "missing or wrong admin token (`unauthorized`)",
  404: "no such delivery (`not_found`)",
  503: "ADMIN_TOKEN is not set (`admin_disabled`)",
} as const;

/** OpenAPI response entries for the given error statuses (401 and 503 apply to every route). */
export function errorResponses<Status extends keyof typeof ERROR_DESCRIPTIONS>(...statuses: Status[]) {
  const entries = [...new Set([401, 503, ...statuses] as (keyof typeof ERROR_DESCRIPTIONS)[])].map((status) => [
    status,
    { description: ERROR_DESCRIPTIONS[status], content: { "application/json": { schema: ErrorSchema } } },
  ]);
  return Object.fromEntries(entries) as Record<Status | 401 | 503, { description: string; content: { "application/json": { schema: typeof ErrorSchema } } }>;
}

/** The security requirement every admin route declares (the scheme is registered in ./index.ts). */
export const BEARER_SECURITY = [{ AdminToken: [] }];
