/**
 * `GET /ui/sources`: every source with a secret set or a delivery stored, and its security grade.
 * The rows come from src/sources.ts and the environment (as `GET /admin/sources`) and, for the
 * sources with deliveries, from the overview's snapshot (at most a minute old).
 */
import { Hono } from "hono";
import { secretsFor } from "../../../config/secrets";
import { SOURCES } from "../../../sources";
import { openStore } from "../../../store";
import type { AppEnv } from "../../types";
import { renderPage } from "../layout";
import { SourcesPage, type SourceRow } from "../pages/sources";

export const sourceRoutes = new Hono<AppEnv>().get("/sources", async (c) => {
  const overview = await openStore(c.env).overview(Date.now());
  const names = new Set([...Object.keys(SOURCES).filter((source) => secretsFor(c.env, source).length > 0), ...Object.keys(overview.bySource)]);
  const rows: SourceRow[] = [...names].sort().map((source) => {
    const provider = Object.hasOwn(SOURCES, source) ? SOURCES[source]! : null;
    return {
      source,
      provider: provider?.kind ?? null,
      grade: provider?.grade ?? null,
      dedupKey: provider?.dedupKey ?? null,
      configured: secretsFor(c.env, source).length > 0,
    };
  });
  const unconfigured = Object.keys(SOURCES).filter((source) => !names.has(source)).length;
  return renderPage(c, { title: "Sources", section: "sources", signedIn: true }, <SourcesPage rows={rows} unconfigured={unconfigured} />);
});
