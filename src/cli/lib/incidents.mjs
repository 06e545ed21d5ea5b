/**
 * `webhook-inbox incidents [--status open|resolved] [--limit N]`: alerting's incidents, through
 * `GET /admin/incidents`, open first; each with its messages per channel and whether they were
 * delivered. `--json` prints the API's answer.
 */
import { InboxError } from "./admin-client.mjs";
import { table } from "./format.mjs";

/** @param {string} message */
function usageError(message) {
  return new InboxError(`${message} (see webhook-inbox --help)`, { exitCode: 2 });
}

/**
 * Prints the incidents.
 * @param {import("./admin-client.mjs").AdminClient} client
 * @param {string[]} rest the positionals after the command (none expected)
 * @param {{ status?: string, limit?: string }} values
 * @param {((json: unknown) => void) | null} print
 * @param {(line: string) => void} out
 * @example
 * await incidents(client, [], { status: "open" }, null, console.log);
 */
export async function incidents(client, rest, values, print, out) {
  if (rest.length > 0) throw usageError("expected: webhook-inbox incidents [--status open|resolved] [--limit N]");
  if (values.status !== undefined && values.status !== "open" && values.status !== "resolved") throw usageError("--status must be open or resolved");
  const limit = values.limit ?? "50";
  const answer = await client.get(`/incidents?limit=${encodeURIComponent(limit)}`);
  const shown = values.status ? answer.incidents.filter((/** @type {{ status: string }} */ incident) => incident.status === values.status) : answer.incidents;
  if (print) return print({ ...answer, incidents: shown });
  out(answer.channels.length === 0 ? "channels: none configured (incidents are recorded only)" : `channels: ${answer.channels.join(", ")}`);
  if (shown.length === 0) {
    out(values.status === "resolved" ? "no resolved incidents" : values.status === "open" ? "no open incidents" : "no incidents");
    return;
  }
  out(
    table(
      ["ID", "STATUS", "RULE", "ABOUT", "COUNT", "SINCE", "RESOLVED", "MESSAGES", "SUMMARY"],
      shown.map((/** @type {any} */ incident) => [
        incident.id,
        incident.status,
        incident.rule,
        [incident.source, incident.subscriber].filter((part) => part !== null).join("/") || "-",
        incident.count,
        incident.since,
        incident.resolvedAt ?? "-",
        messageSummary(incident.messages),
        incident.summary.length > 80 ? `${incident.summary.slice(0, 79)}…` : incident.summary,
      ]),
    ),
  );
}

/**
 * `3 sent, 1 pending` over an incident's messages.
 * @param {{ status: string }[]} messages
 */
export function messageSummary(messages) {
  if (messages.length === 0) return "-";
  const counts = new Map();
  for (const message of messages) counts.set(message.status, (counts.get(message.status) ?? 0) + 1);
  return [...counts].map(([status, n]) => `${n} ${status}`).join(", ");
}
