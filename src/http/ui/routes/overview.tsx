/** `GET /ui`: the overview, from the snapshot the store keeps (refreshed at most once a minute). */
import { Hono } from "hono";
import type { AppEnv } from "../../types";
import { renderPage } from "../layout";
import { OverviewPage } from "../pages/overview";
import { openStore } from "../../../store";

/** How often the overview reloads itself (with script): the snapshot changes once a minute at most. */
const REFRESH_SECONDS = 60;

export const overviewRoutes = new Hono<AppEnv>().get("/", async (c) => {
  const nowMs = Date.now();
  const overview = await openStore(c.env).overview(nowMs);
  return renderPage(
    c,
    { title: "Overview", section: "overview", signedIn: true, refreshSeconds: REFRESH_SECONDS },
    <OverviewPage overview={overview} nowMs={nowMs} />,
  );
});
