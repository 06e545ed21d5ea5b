/**
 * The pure parts of `npm run setup:cloudflare`: what to create (read from wrangler.toml and
 * src/sources.ts, so renaming a resource there is enough), and how to read wrangler's answers.
 */

/** The all-zero id wrangler.toml ships with until `wrangler d1 create` gives a real one. */
export const PLACEHOLDER_DATABASE_ID = "00000000-0000-0000-0000-000000000000";

/**
 * The resources wrangler.toml names.
 * @param {string} toml
 * @returns {{ worker: string, database: string, databaseId: string | null, queues: string[] }}
 * @example
 * resourcesOf(readFileSync("wrangler.toml", "utf8")).queues; // ["webhook-deliveries", "webhook-deliveries-dlq"]
 */
export function resourcesOf(toml) {
  const text = withoutComments(toml);
  const worker = /^name\s*=\s*"([^"]+)"/m.exec(text)?.[1];
  const database = /^database_name\s*=\s*"([^"]+)"/m.exec(text)?.[1];
  if (!worker || !database) throw new Error("wrangler.toml names no worker or no D1 database_name");
  const databaseId = /^database_id\s*=\s*"([^"]*)"/m.exec(text)?.[1] ?? null;
  // Producers, consumers and dead_letter_queue entries all name queues; each is created once.
  const queues = [...text.matchAll(/^(?:queue|dead_letter_queue)\s*=\s*"([^"]+)"/gm)].map((match) => /** @type {string} */ (match[1]));
  return { worker, database, databaseId, queues: [...new Set(queues)] };
}

/** @param {string} toml */
function withoutComments(toml) {
  return toml.replace(/^\s*#.*$/gm, "");
}

/**
 * The database id in `wrangler d1 create`'s output (a TOML or JSON snippet), or null.
 * @param {string} output
 */
export function parseDatabaseId(output) {
  return /"?database_id"?\s*[:=]\s*"([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})"/i.exec(output)?.[1] ?? null;
}

/**
 * The id of database `name` in `wrangler d1 list --json`'s output, or null.
 * @param {string} output
 * @param {string} name
 */
export function findDatabaseId(output, name) {
  try {
    const databases = JSON.parse(output);
    const match = Array.isArray(databases) ? databases.find((database) => database?.name === name) : undefined;
    return match?.uuid ?? match?.database_id ?? null;
  } catch {
    return null;
  }
}

/**
 * wrangler.toml with `database_id` set to `id` (only the line of the D1 binding changes).
 * @param {string} toml
 * @param {string} id
 */
export function setDatabaseId(toml, id) {
  if (!/^database_id\s*=\s*"[^"]*"/m.test(toml)) throw new Error("wrangler.toml has no database_id line to update");
  return toml.replace(/^(database_id\s*=\s*)"[^"]*"/m, `$1"${id}"`);
}

/**
 * The secret names the inbox reads: `<SOURCE>_WEBHOOK_SECRET` per source configured in
 * src/sources.ts (commented-out sources skipped), then ADMIN_TOKEN.
 * @param {string} sourcesTs
 * @example
 * secretNames('export const SOURCES = {\n  stripe: stripe(),\n  "my-shop": shopify(),\n};'); // ["STRIPE_WEBHOOK_SECRET", "MY_SHOP_WEBHOOK_SECRET", "ADMIN_TOKEN"]
 */
export function secretNames(sourcesTs) {
  const block = /SOURCES[^=]*=\s*\{([\s\S]*?)\n\};/.exec(sourcesTs)?.[1] ?? "";
  const names = [...block.matchAll(/^ {2}(?:"([^"]+)"|([A-Za-z0-9_-]+))\s*:/gm)].map((match) => /** @type {string} */ (match[1] ?? match[2]));
  return [...names.map((name) => `${name.toUpperCase().replaceAll("-", "_")}_WEBHOOK_SECRET`), "ADMIN_TOKEN"];
}
