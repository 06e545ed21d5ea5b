/**
 * `GET /ui/login`, `POST /ui/login`, `POST /ui/logout`.
 *
 * The token is compared in constant time, and only after the sign-in throttle of the client's
 * address has counted the attempt (./sign-in-throttle.ts): guessing is slowed down across every
 * isolate, and a locked-out address is refused without its token being looked at.
 */
import { Hono } from "hono";
import { timingSafeEqual } from "hono/utils/buffer";
import type { AppEnv } from "../../types";
import { adminToken } from "../auth";
import { renderPage } from "../layout";
import { safeNextPath } from "../next-path";
import { SignInPage } from "../pages/sign-in";
import { endSession, hasSession, startSession } from "../session";
import { throttleFor } from "../sign-in-throttle";

/** Longer than any token anyone would paste; a larger field is not hashed at all. */
const MAX_TOKEN_LENGTH = 4_096;

export const signInRoutes = new Hono<AppEnv>()
  .get("/login", async (c) => {
    const next = safeNextPath(c.req.query("next"));
    if (await hasSession(c, adminToken(c), Date.now())) return c.redirect(next, 303);
    return renderPage(c, { title: "Sign in" }, <SignInPage next={next} />);
  })
  .post("/login", async (c) => {
    const form = await c.req.parseBody();
    const next = safeNextPath(typeof form.next === "string" ? form.next : undefined);
    const token = typeof form.token === "string" ? form.token : "";
    const throttle = throttleFor(c.env, c.req.raw);
    const gate = await throttle.attempt();
    if (!gate.allowed) {
      c.header("Retry-After", String(gate.retryAfterSeconds));
      const problem = `Too many sign-in attempts from your address. Try again in ${gate.retryAfterSeconds} s.`;
      return renderPage(c, { title: "Sign in" }, <SignInPage next={next} problem={problem} />, 429);
    }
    // Constant-time (on SHA-256 digests): a timing leak would reveal the token byte by byte.
    if (token.length === 0 || token.length > MAX_TOKEN_LENGTH || !(await timingSafeEqual(token, adminToken(c)))) {
      return renderPage(c, { title: "Sign in" }, <SignInPage next={next} problem="That is not the admin token." />, 401);
    }
    await throttle.succeeded();
    await startSession(c, adminToken(c), Date.now());
    return c.redirect(next, 303);
  })
  .post("/logout", (c) => {
    endSession(c);
    return c.redirect("/ui/login", 303);
  });
