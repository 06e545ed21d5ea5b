/**
 * The frame of every dashboard page: head (styles, the one script, with this response's CSP
 * nonce), a skip link, the navigation, and `<main>`.
 */
import type { Context } from "hono";
import { html } from "hono/html";
import type { Child } from "hono/jsx";
import type { AppEnv } from "../types";
import { ASSET_PATHS } from "./assets";

export type Section = "overview" | "deliveries" | "sources" | "incidents" | "none";

export interface PageOptions {
  readonly title: string;
  /** Which navigation entry is current. */
  readonly section?: Section;
  /** Whether to show the sign-out button (not on the sign-in and closed pages). */
  readonly signedIn?: boolean;
  /** Reload the page this often (seconds) while it is visible; needs the script. */
  readonly refreshSeconds?: number;
}

function Layout(props: PageOptions & { nonce: string | undefined; children: Child }) {
  const current = (section: Section) => (props.section === section ? "page" : undefined);
  return (
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <meta name="color-scheme" content="light dark" />
        <title>{`${props.title} · webhook-inbox`}</title>
        <link rel="icon" href={ASSET_PATHS.favicon} type="image/svg+xml" />
        <link rel="stylesheet" href={ASSET_PATHS.css} />
        {props.nonce ? <script src={ASSET_PATHS.js} nonce={props.nonce} defer /> : null}
      </head>
      <body data-refresh={props.refreshSeconds}>
        <a class="skip" href="#main">
          Skip to content
        </a>
        <header class="top">
          <a class="brand" href="/ui">
            webhook-inbox
          </a>
          {props.signedIn ? (
            <nav aria-label="Main">
              <ul>
                <li>
                  <a href="/ui" aria-current={current("overview")}>
                    Overview
                  </a>
                </li>
                <li>
                  <a href="/ui/deliveries" aria-current={current("deliveries")}>
                    Deliveries
                  </a>
                </li>
                <li>
                  <a href="/ui/sources" aria-current={current("sources")}>
                    Sources
                  </a>
                </li>
                <li>
                  <a href="/ui/incidents" aria-current={current("incidents")}>
                    Incidents
                  </a>
                </li>
              </ul>
            </nav>
          ) : null}
          {props.signedIn ? (
            <form method="post" action="/ui/logout" class="sign-out">
              <button type="submit" class="link-button">
                Sign out
              </button>
            </form>
          ) : null}
        </header>
        <main id="main" tabindex={-1}>
          {props.children}
        </main>
      </body>
    </html>
  );
}

/**
 * Renders a page in the frame, as HTML with its doctype.
 * @example
 * return renderPage(c, { title: "Overview", section: "overview", signedIn: true }, <Overview … />);
 */
export function renderPage(c: Context<AppEnv>, options: PageOptions, body: Child, status: 200 | 400 | 401 | 403 | 404 | 409 | 413 | 415 | 429 | 500 | 503 = 200) {
  const page = (
    <Layout {...options} nonce={c.get("secureHeadersNonce")}>
      {body}
    </Layout>
  );
  return c.html(html`<!DOCTYPE html>${page}`, status);
}
