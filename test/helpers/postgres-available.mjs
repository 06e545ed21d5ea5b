// Whether the Node-side Postgres tests can run here: they skip, naming what to install, on a
// machine without Debian's postgresql binaries, except on CI (CI=true), where a missing server
// must fail the run rather than leave the Postgres store untested.
import { findPostgresBinaries, PostgresNotInstalledError } from "../../src/cli/lib/local-postgres.mjs";

function installed() {
  try {
    findPostgresBinaries();
    return true;
  } catch (error) {
    if (error instanceof PostgresNotInstalledError) return false;
    throw error;
  }
}

/** node:test's `skip` option: the reason to skip, or false to run. */
export const skipWithoutPostgres = !installed() && process.env.CI !== "true" ? "Postgres is not installed (apt-get install postgresql)" : false;
