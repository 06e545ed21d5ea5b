// docs/architecture.md's map of the code must keep up with src/: it links every folder of src/ and
// every file directly in it, so a folder added, moved or renamed shows up here until the map says
// what it holds. (That each link still leads somewhere is docs-links.test.mjs's check.)
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const MAP = readFileSync(join(ROOT, "docs", "architecture.md"), "utf8");

/** Every folder under src/ (as `src/a/b/`) and every file directly in src/, sorted. */
function foldersAndTopFiles() {
  const entries = readdirSync(join(ROOT, "src"), { recursive: true, withFileTypes: true });
  return entries
    .filter((entry) => entry.isDirectory() || entry.parentPath === join(ROOT, "src"))
    .map((entry) => {
      const path = join(entry.parentPath, entry.name).slice(ROOT.length).split("\\").join("/");
      return entry.isDirectory() ? `${path}/` : path;
    })
    .sort();
}

describe("the map of src/ in docs/architecture.md", () => {
  const expected = foldersAndTopFiles();

  it("finds folders and files in src/", () => {
    assert.ok(expected.some((path) => path.endsWith("/")) && expected.some((path) => !path.endsWith("/")), expected.join(", "));
  });

  it("links every folder of src/ and every file directly in it", () => {
    assert.deepEqual(expected.filter((path) => !MAP.includes(`](../${path})`)), []);
  });
});
