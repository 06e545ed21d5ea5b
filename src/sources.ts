/**
 * The sources this inbox accepts: `POST /webhooks/<name>` for each key below.
 *
 * Each source names its provider's verifier and options. Its secret comes from the
 * `<NAME>_WEBHOOK_SECRET` secret (upper-cased, `-` → `_`), e.g. `wrangler secret put
 * STANDARD_WEBHOOK_SECRET`; several secrets separated by spaces or commas are all accepted.
 * Add, remove or rename sources here; nothing else needs to change.
 */
import { standardWebhooks } from "./providers/standard-webhooks";
import type { Provider } from "./providers/types";

export const SOURCES: Readonly<Record<string, Provider>> = {
  standard: standardWebhooks(),
  svix: standardWebhooks({ headerPrefix: "svix" }),
};

/** The provider of a configured source, or undefined for an unknown name. */
export function findSource(name: string): Provider | undefined {
  return Object.hasOwn(SOURCES, name) ? SOURCES[name] : undefined;
}
