/** `webhook-inbox status`: counts by status and source, the oldest waiting delivery (GET /admin/stats). */
import { duration, table } from "./format.mjs";
import { terminalSafe } from "./sources.mjs";

/** `filtered`: kept out by its source's filter (docs/filters.md); an older inbox does not count it (0). */
export const STATUSES = ["received", "processing", "done", "failed", "filtered"];

/**
 * @param {{ get(path: string): Promise<any> }} client
 * @param {((json: unknown) => void) | null} print
 * @param {(line: string) => void} out
 */
export async function status(client, print, out) {
  const stats = await client.get("/stats");
  if (print) return print(stats);
  out(table(["STATUS", "COUNT"], STATUSES.map((name) => [name, name === "done" && stats.unhandled > 0 ? `${stats.counts[name]} (${stats.unhandled} unhandled)` : stats.counts[name] ?? 0])));
  out("");
  out(`oldest waiting: ${duration(stats.oldestWaitingSeconds)}`);
  /** @type {[string, Record<string, number>][]} */
  const sources = Object.entries(stats.bySource).sort(([a], [b]) => a.localeCompare(b));
  if (sources.length > 0) {
    out("");
    out(table(["SOURCE", ...STATUSES.map((name) => name.toUpperCase())], sources.map(([source, counts]) => [terminalSafe(source), ...STATUSES.map((name) => counts[name] ?? 0)])));
    out("\neach source's security grade (what its provider signs): webhook-inbox sources");
  }
}
