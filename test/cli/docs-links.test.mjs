// The README and the pages of docs/ link to each other and into the code. Every relative link must
// resolve, as GitHub renders it: a file or folder that exists in the checkout, and for `#anchor` a
// heading of the target page whose GitHub slug it is. A page moved, a heading reworded or a source
// file renamed without its links fails here, not in a reader's browser. External links (https:,
// mailto:) are not fetched: CI has no internet, and they are not ours to keep.
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync, mkdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, relative, resolve, sep } from "node:path";
import { describe, it } from "node:test";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));

/** README.md and every page of docs/, relative to `root`. */
function markdownPages(root) {
  const docs = existsSync(join(root, "docs")) ? readdirSync(join(root, "docs")).filter((name) => name.endsWith(".md")) : [];
  return ["README.md", ...docs.sort().map((name) => join("docs", name))];
}

/** The lines of a page outside fenced code blocks (``` or ~~~), with their 1-based numbers. */
function proseLines(text) {
  const lines = [];
  let fence = null;
  text.split("\n").forEach((line, index) => {
    const opening = /^\s*(`{3,}|~{3,})/.exec(line);
    if (fence === null && opening) fence = opening[1][0].repeat(opening[1].length);
    else if (fence !== null && line.trim().startsWith(fence)) fence = null;
    else if (fence === null) lines.push({ number: index + 1, line });
  });
  return lines;
}

/** A code span's content can hold brackets and parentheses that are no link: blank them out. */
function withoutCodeSpanPunctuation(line) {
  return line.replace(/(`+)([\s\S]*?)\1/g, (span, ticks, content) => ticks + content.replace(/[[\]()]/g, "_") + ticks);
}

/** Inline links and images `[text](target "title")` of a page: each target with its line. */
function linksOf(text) {
  const links = [];
  for (const { number, line } of proseLines(text)) {
    const pattern = /!?\[(?:[^[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g;
    for (const match of withoutCodeSpanPunctuation(line).matchAll(pattern)) links.push({ line: number, target: match[1] });
  }
  return links;
}

/**
 * The anchor GitHub gives a heading (github-slugger): the rendered text lower-cased, every character
 * that is not a letter, mark, number, `_`, `-` or space dropped, spaces turned into `-`; a repeated
 * slug gets `-1`, `-2`, … in order.
 */
function headingSlugs(text) {
  const slugs = new Set();
  const seen = new Map();
  for (const { line } of proseLines(text)) {
    const heading = /^ {0,3}#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (!heading) continue;
    const rendered = heading[1]
      .replace(/!?\[([^\]]*)\]\([^)]*\)/g, "$1") // a link renders as its text
      .replace(/`/g, "")
      .replace(/<[^>]+>/g, "");
    const base = rendered.toLowerCase().replace(/[^\p{L}\p{M}\p{N}\p{Pc}\- ]/gu, "").replace(/ /g, "-");
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    slugs.add(count === 0 ? base : `${base}-${count}`);
  }
  for (const match of text.matchAll(/<a\s+(?:id|name)="([^"]+)"/g)) slugs.add(match[1]);
  return slugs;
}

/**
 * What is wrong with the relative links of `page` (a path relative to `root`): one line each, empty
 * when every link resolves.
 */
function brokenLinks(root, page) {
  const problems = [];
  const text = readFileSync(join(root, page), "utf8");
  for (const { line, target } of linksOf(text)) {
    if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // https:, mailto:: not ours to check
    const hash = target.indexOf("#");
    const path = decodeURIComponent(hash < 0 ? target : target.slice(0, hash));
    const anchor = hash < 0 ? null : decodeURIComponent(target.slice(hash + 1));
    const where = `${page}:${line}: ${target}`;
    const file = path === "" ? join(root, page) : resolve(root, dirname(page), path);
    const inside = relative(root, file);
    if (inside.startsWith("..") || inside.split(sep).includes("node_modules")) {
      problems.push(`${where}: leads outside the repository`);
      continue;
    }
    if (!existsSync(file)) {
      problems.push(`${where}: no such file or folder`);
      continue;
    }
    if (anchor === null) continue;
    if (!file.endsWith(".md") || statSync(file).isDirectory()) {
      // GitHub's anchors into a source file are its line numbers.
      if (!/^L\d+(-L\d+)?$/.test(anchor)) problems.push(`${where}: #${anchor} is not a line of a source file`);
      continue;
    }
    if (!headingSlugs(readFileSync(file, "utf8")).has(anchor)) problems.push(`${where}: no heading with the anchor #${anchor}`);
  }
  return problems;
}

describe("links of README.md and docs/", () => {
  const pages = markdownPages(ROOT);

  it("finds the README and the docs pages", () => {
    assert.ok(pages.length > 5, `pages: ${pages.join(", ")}`);
  });

  for (const page of pages) {
    it(`resolve in ${page}`, () => {
      assert.ok(linksOf(readFileSync(join(ROOT, page), "utf8")).length > 0, `${page} has links`);
      assert.deepEqual(brokenLinks(ROOT, page), []);
    });
  }

  it("reach every page of docs/ from the README", () => {
    const linked = new Set(linksOf(readFileSync(join(ROOT, "README.md"), "utf8")).map(({ target }) => target.split("#")[0]));
    const unlinked = pages.filter((page) => page !== "README.md" && !linked.has(page.split(sep).join("/")));
    assert.deepEqual(unlinked, []);
  });
});

describe("the link check", () => {
  /** A checkout of a README, a docs page and a source file, written to a temporary folder. */
  function checkout(readme, page) {
    const root = mkdtempSync(join(tmpdir(), "webhook-inbox-links-"));
    mkdirSync(join(root, "docs"));
    mkdirSync(join(root, "src"));
    writeFileSync(join(root, "src", "index.ts"), "export {};\n");
    writeFileSync(join(root, "README.md"), readme);
    writeFileSync(join(root, "docs", "guide.md"), page);
    return root;
  }

  const page = [
    "# The guide",
    "## Postgres (Hyperdrive)",
    "## `forward()` in the registry",
    "## A [linked](../README.md) heading",
    "## Postgres (Hyperdrive)",
    "```sh",
    "# a comment, not a heading",
    "[not a link](nowhere.md)",
    "```",
    "See [the code](../src/index.ts#L1), [the entry](../src/index.ts) and [below](#forward-in-the-registry).",
    "A code span `[x](y)` is no link.",
  ].join("\n");

  it("accepts files, folders, GitHub's heading anchors and line anchors", () => {
    const readme = [
      "# Home",
      "[guide](docs/guide.md), [docs](docs/), [pg](docs/guide.md#postgres-hyperdrive), [again](docs/guide.md#postgres-hyperdrive-1),",
      "[linked](docs/guide.md#a-linked-heading), [top](#home), [site](https://example.com/missing.md), [`src/index.ts`](src/index.ts)",
    ].join("\n");
    const root = checkout(readme, page);
    try {
      assert.deepEqual(brokenLinks(root, "README.md"), []);
      assert.deepEqual(brokenLinks(root, join("docs", "guide.md")), []);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });

  it("names a missing file, a missing anchor, a fenced heading's anchor, a non-line anchor and a way out of the repository", () => {
    const readme = [
      "# Home",
      "[gone](docs/gone.md) and [src](src/index.ts) without `../` from docs is fine here,",
      "[anchor](docs/guide.md#no-such-heading), [fenced](docs/guide.md#a-comment-not-a-heading),",
      "[line](src/index.ts#top), [out](../elsewhere/README.md)",
    ].join("\n");
    const root = checkout(readme, `${page}\nFrom docs, [the code](src/index.ts) needs ../.`);
    try {
      assert.deepEqual(brokenLinks(root, "README.md"), [
        "README.md:2: docs/gone.md: no such file or folder",
        "README.md:3: docs/guide.md#no-such-heading: no heading with the anchor #no-such-heading",
        "README.md:3: docs/guide.md#a-comment-not-a-heading: no heading with the anchor #a-comment-not-a-heading",
        "README.md:4: src/index.ts#top: #top is not a line of a source file",
        "README.md:4: ../elsewhere/README.md: leads outside the repository",
      ]);
      assert.deepEqual(brokenLinks(root, join("docs", "guide.md")), [`${join("docs", "guide.md")}:12: src/index.ts: no such file or folder`]);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});
