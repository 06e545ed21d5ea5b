/** The `webhook-inbox --help` text. */
import { DEFAULT_URL } from "./local-inbox.mjs";
import { PROVIDERS } from "./signers.mjs";

export const HELP = `Usage: webhook-inbox <command> [options]

Commands:
  status                              counts by status and source, oldest waiting delivery
  sources [--all]                     the sources with a secret set (--all: the whole
                                      catalogue), each with its security grade (what its
                                      provider signs; docs/providers.md "Security grade"),
                                      the grade's gaps and its dedup key
  list [--status S] [--source S]      deliveries, newest first (--limit 1-200, default 50;
       [--type T] [--since T]         --cursor continues from the previous page; --type: an
       [--until T] [--unhandled]      event type; --since/--until: received at or after /
       [--limit N] [--cursor C]       before an ISO time, e.g. 2026-12-03T00:00:00Z;
                                      --unhandled: done with no handler matched; --status
                                      filtered: kept out by the source's filter)
  show <source> <id>                  one delivery: its fields, request headers, attempt
                                      history and body
  replay <source> <id> [--force]      put a failed or filtered delivery back (--force: also
                                      a done one;
       [--subscriber NAME]            --subscriber: only that subscriber's run of it)
  replay --failed [--source S]        put every failed delivery back (of one source, one
       [--subscriber NAME]            subscriber's failures only, event type or time range)
       [--type T] [--since T]
       [--until T]
  incidents [--status S]              alerting's incidents, open first (S: open or
       [--limit N]                    resolved), with their messages per channel
  send <source> [file]                sign a sample delivery of the source's provider (or
       [--id ID] [--event TYPE]       the file, as is; - reads stdin) with its secret
       [--provider P]                 (<SOURCE>_WEBHOOK_SECRET from the environment, else
                                      .dev.vars) and POST it to <url>/webhooks/<source>;
                                      --id: the delivery id (a sample's is new each time);
                                      --event: its type; --provider: for a source not named
                                      after its provider, one of:
                                      ${PROVIDERS.join(", ")}

Options:
  --url URL        the inbox (default: $INBOX_URL, else the running \`npm run dev\`,
                   else ${DEFAULT_URL})
  --token TOKEN    the admin token (default: $INBOX_ADMIN_TOKEN; for a local inbox,
                   ADMIN_TOKEN from .dev.vars)
  --json           print the API's JSON instead of tables, for scripts
  -h, --help       this help

Exit codes: 0 done, 1 the inbox refused or could not be reached, 2 bad usage.`;
