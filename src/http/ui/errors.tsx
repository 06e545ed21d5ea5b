/**
 * The dashboard's error boundary: every error becomes an HTML page that says what to do, and
 * nothing internal (no stack, SQL, token or delivery data). Installed as the UI's `onError`, and
 * used by the app's for `/ui` paths (a bad config is found before the UI's own middlewares run).
 */
import type { Context } from "hono";
import { HTTPException } from "hono/http-exception";
import { ConfigError } from "../../config";
import type { AppEnv } from "../types";
import { renderPage } from "./layout";

type ErrorStatus = 400 | 401 | 403 | 404 | 409 | 413 | 415 | 429 | 500 | 503;

const MESSAGES: Partial<Record<number, { title: string; text: string }>> = {
  400: { title: "Bad request", text: "The request could not be understood." },
  403: {
    title: "Refused: not sent from this dashboard",
    text: "This form was sent from another site, or your browser did not say where it came from. Nothing was changed. Open the dashboard and try again from there.",
  },
  404: { title: "Not found", text: "There is no such page." },
  413: { title: "Too large", text: "The dashboard's forms are a few fields; this one was far larger. Nothing was changed." },
  415: { title: "Forms only", text: "The dashboard accepts form submissions only." },
};

/**
 * Headers for an error page rendered outside the UI's middlewares: the same protections, a
 * policy without a nonce (the page has no script).
 */
const ERROR_HEADERS: Record<string, string> = {
  "Cache-Control": "no-store",
  "Content-Security-Policy": "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
  "X-Frame-Options": "DENY",
  "X-Content-Type-Options": "nosniff",
  "Referrer-Policy": "same-origin",
};

/** The error page for `error`, with its status. */
export async function renderUiError(error: Error, c: Context<AppEnv>): Promise<Response> {
  let status: ErrorStatus;
  let title: string;
  let text: string;
  if (error instanceof ConfigError) {
    console.error(error.message);
    [status, title, text] = [503, "The inbox configuration is invalid", "A variable of the inbox is invalid. GET /health names it (never its value); fix it and reload."];
  } else if (error instanceof HTTPException && error.status < 500) {
    status = (MESSAGES[error.status] ? error.status : 400) as ErrorStatus;
    ({ title, text } = MESSAGES[status]!);
  } else {
    console.error("dashboard: unhandled error:", error instanceof Error ? error.name : typeof error, error.message);
    [status, title, text] = [500, "Something went wrong", "The dashboard could not show this page. The Worker's logs (wrangler tail) say why; nothing about it is shown here."];
  }
  const response = await renderPage(
    c,
    { title },
    <>
      <h1>{title}</h1>
      <p>{text}</p>
      <p>
        <a href="/ui">Back to the overview</a>
      </p>
    </>,
    status,
  );
  for (const [name, value] of Object.entries(ERROR_HEADERS)) {
    if (!response.headers.has(name)) response.headers.set(name, value);
  }
  return response;
}
