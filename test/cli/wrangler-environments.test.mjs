// wrangler.toml's `postgres` environment repeats the default one's bindings and vars (wrangler
// inherits neither): read through wrangler itself, the two must differ only in the Hyperdrive
// binding, or a var changed in one place would quietly not apply to the other.
import assert from "node:assert/strict";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, it } from "node:test";
import { unstable_readConfig } from "wrangler";

const CONFIG = join(fileURLToPath(new URL("../..", import.meta.url)), "wrangler.toml");

/** What the Worker gets from an environment of wrangler.toml, as wrangler reads it. */
function worker(env) {
  const config = unstable_readConfig({ config: CONFIG, env });
  return {
    vars: config.vars,
    d1: config.d1_databases.map(({ binding, database_name, migrations_dir }) => ({ binding, database_name, migrations_dir })),
    producers: config.queues.producers,
    consumers: config.queues.consumers,
    durableObjects: config.durable_objects.bindings,
    crons: config.triggers.crons,
    compatibility: [config.compatibility_date, config.compatibility_flags],
    main: config.main,
    hyperdrive: config.hyperdrive.map(({ binding }) => binding),
  };
}

describe("wrangler.toml's environments", () => {
  const main = worker(undefined);
  const postgres = worker("postgres");

  it("give the postgres environment the Hyperdrive binding, and the default none", () => {
    assert.deepEqual(main.hyperdrive, []);
    assert.deepEqual(postgres.hyperdrive, ["HYPERDRIVE"]);
  });

  for (const key of ["vars", "d1", "producers", "consumers", "durableObjects", "crons", "compatibility", "main"]) {
    it(`repeat the default environment's ${key} in the postgres one`, () => {
      assert.ok(JSON.stringify(main[key]).length > 2, `the default environment has ${key}`);
      assert.deepEqual(postgres[key], main[key]);
    });
  }
});
