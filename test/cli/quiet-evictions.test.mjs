// `npm test`'s output must not cry wolf: the tests that evict a Durable Object on purpose (the lease's
// and the forward limiter's) used `ctx.abort()`, which workerd logs as an "uncaught exception", and
// the lines read like failures. They now evict with the runtime's own `evictDurableObject`. This
// runs those two files in the Workers pool, as `npm test` does, and reads what they print.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { join } from "node:path";
import { describe, it } from "node:test";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const VITEST = join(ROOT, "node_modules", "vitest", "vitest.mjs");
const FILES = ["test/processing/lease/lease.test.ts", "test/forwarding/store-free/limiter.test.ts"];

describe("the eviction tests' output", { timeout: 300_000 }, () => {
  it("passes without an uncaught exception logged by the runtime", async () => {
    const { code, output } = await new Promise((resolve) =>
      execFile(process.execPath, [VITEST, "run", "--config", "test/vitest.config.ts", ...FILES], { cwd: ROOT, env: { ...process.env, CI: "true", NO_COLOR: "1" }, maxBuffer: 64 * 1024 * 1024 }, (error, stdout, stderr) =>
        resolve({ code: error ? error.code : 0, output: `${stdout}\n${stderr}` }),
      ),
    );
    assert.equal(code, 0, output.slice(-3000));
    assert.match(output, /Test Files\s+2 passed/);
    assert.doesNotMatch(output, /uncaught exception/i);
  });
});
