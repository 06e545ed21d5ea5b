/** `GET /ui`: the overview, from the snapshot the store keeps (refreshed at most once a minute). */
import { Hono } from "hono";
import type { AppEnv } from "../../types";
import { renderPage } from "../layout";
import { OverviewPage } from "../pages/overview";
import { openStore } from "../../../store";
import { readBreakers } from "../../../forwarding/breakers";

/** How often the overview reloads itself (with script): the snapshot changes once a minute at most. */
const REFRESH_SECONDS = 60;

export const overviewRoutes = new Hono<AppEnv>().get("/", async (c) => {
  const nowMs = Date.now();
  // One call per configured forward destination, alongside the store's one read.
  const [overview, breakers] = await Promise.all([openStore(c.env).overview(nowMs), readBreakers(c.env)]);
  return renderPage(
    c,
    { title: "Overview", section: "overview", signedIn: true, refreshSeconds: REFRESH_SECONDS },
    <OverviewPage overview={overview} nowMs={nowMs} breakers={breakers} />,
  );
});
