/**
 * `GET /ui/deliveries` (filters, pages, lookup by id), `GET /ui/deliveries/:source/:id` (every
 * field, headers, body, attempt history) and the raw body download. Delivery data is
 * attacker-controlled: it must come out as text, never as markup.
 */
import { describe, expect, it } from "vitest";
import { downloadName } from "../../../src/http/ui/routes/deliveries";
import { ui } from "./client";
import { recordDelivery } from "../../helpers/store-db";
import { putDelivery } from "./fixtures";

const HOSTILE = `<script>alert("pwned")</script><img src=x onerror=alert(1)>`;
/** What HTMLescaping makes of HOSTILE: no tag survives. */
const ESCAPED = "&lt;script&gt;alert(&quot;pwned&quot;)&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt;";

/** The rows of the page's table body, as the text of their cells. */
function rows(html: string): string[][] {
  const body = /<tbody>([\s\S]*?)<\/tbody>/.exec(html)?.[1] ?? "";
  return [...body.matchAll(/<tr>([\s\S]*?)<\/tr>/g)].map((row) =>
    [...row[1]!.matchAll(/<t[dh][^>]*>([\s\S]*?)<\/t[dh]>/g)].map((cell) => cell[1]!.replace(/<[^>]+>/g, "").trim()),
  );
}

/** The ids (third column) of the list's rows. */
const ids = (html: string) => rows(html).map((row) => row[2]);

describe("GET /ui/deliveries", () => {
  it("lists deliveries newest first with status, source, id, event type, attempts, error, received and updated", async () => {
    const at = Date.now() - 60_000;
    await putDelivery({ source: "ui-list", id: "older", receivedAtMs: at, status: "done", attempts: 1 });
    await putDelivery({ source: "ui-list", id: "newer", receivedAtMs: at + 1_000, status: "failed", attempts: 2, error: "PermanentError: no amount" });
    const page = await ui("/ui/deliveries?source=ui-list");
    expect(page.status).toBe(200);
    expect(rows(page.text)).toEqual([
      ["failed", "ui-list", "newer", "test.event", "2", "PermanentError: no amount", expect.stringMatching(/ago$/), expect.stringMatching(/ago|just now/)],
      ["done", "ui-list", "older", "test.event", "1", "", expect.stringMatching(/ago$/), expect.stringMatching(/ago|just now/)],
    ]);
    // Absolute UTC on hover, the machine-readable time in datetime.
    expect(page.text).toMatch(/<time datetime="\d{4}-\d\d-\d\dT[\d:.]+Z" title="\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC" data-relative="">/);
    expect(page.text).toContain('<a href="/ui/deliveries/ui-list/newer">newer</a>');
    // The status in words, the colour a class beside it.
    expect(page.text).toContain('<span class="badge badge-failed">failed</span>');
  });

  it("filters by status, event type and received time, and keeps the filters in the form", async () => {
    const base = Date.parse("2026-03-01T10:00:00.000Z");
    await putDelivery({ source: "ui-filter", id: "a", receivedAtMs: base, status: "failed", eventType: "invoice.paid" });
    await putDelivery({ source: "ui-filter", id: "b", receivedAtMs: base + 3_600_000, status: "failed", eventType: "invoice.paid" });
    await putDelivery({ source: "ui-filter", id: "c", receivedAtMs: base + 3_600_000, status: "done", eventType: "invoice.paid" });
    await putDelivery({ source: "ui-filter", id: "d", receivedAtMs: base + 3_600_000, status: "failed", eventType: "charge.failed" });
    const page = await ui("/ui/deliveries?source=ui-filter&status=failed&eventType=invoice.paid&since=2026-03-01T10:30&until=2026-03-01T12:00");
    expect(ids(page.text)).toEqual(["b"]);
    expect(page.text).toContain('<option value="failed" selected="">failed</option>');
    expect(page.text).toContain('name="eventType" type="text" value="invoice.paid"');
    expect(page.text).toContain('name="since" type="text" value="2026-03-01T10:30:00.000Z"');
    expect(ids((await ui("/ui/deliveries?source=ui-filter&until=2026-03-01T11:00:00.000Z")).text)).toEqual(["a"]);
    expect(ids((await ui("/ui/deliveries?source=ui-filter&since=2026-03-01")).text)).toEqual(["d", "c", "b", "a"]);
  });

  it("lists only the unhandled deliveries with unhandled=1, its box checked", async () => {
    await putDelivery({ source: "ui-unhandled", id: "matched", status: "done", handled: true });
    await putDelivery({ source: "ui-unhandled", id: "nobody", status: "done", handled: false });
    await putDelivery({ source: "ui-unhandled", id: "waiting", status: "received" });
    const page = await ui("/ui/deliveries?source=ui-unhandled&unhandled=1");
    expect(ids(page.text)).toEqual(["nobody"]);
    expect(page.text).toContain('name="unhandled" type="checkbox" value="1" checked=""');
    expect(ids((await ui("/ui/deliveries?source=ui-unhandled")).text)).toHaveLength(3);
  });

  it("names a bad filter and shows the page without it", async () => {
    const page = await ui("/ui/deliveries?source=ui-filter&status=lost&since=yesterday&until=2026-02-31");
    expect(page.status).toBe(200);
    expect(page.text).toContain("status: not one of received, processing, done, failed");
    expect(page.text).toContain("received since: not a time");
    expect(page.text).toContain("received until: not a time");
    expect(ids(page.text)).toHaveLength(4);
  });

  it("pages with the admin API's cursor, neither skipping nor repeating a row", async () => {
    const base = Date.now() - 3_600_000;
    for (let index = 0; index < 53; index++) await putDelivery({ source: "ui-pages", id: `p-${String(index).padStart(2, "0")}`, receivedAtMs: base + index });
    const first = await ui("/ui/deliveries?source=ui-pages");
    expect(ids(first.text)).toHaveLength(50);
    expect(first.text).not.toContain("First page");
    const next = /<a href="(\/ui\/deliveries\?source=ui-pages&amp;cursor=[A-Za-z0-9_-]+)">Next page<\/a>/.exec(first.text)?.[1];
    expect(next).toBeDefined();
    const second = await ui(next!.replaceAll("&amp;", "&"));
    expect(ids(second.text)).toEqual(["p-02", "p-01", "p-00"]);
    expect(second.text).toContain("First page");
    expect(second.text).toContain("No more deliveries.");
    expect(new Set([...ids(first.text), ...ids(second.text)]).size).toBe(53);
  });

  it("shows the first page and says so for a cursor it did not make", async () => {
    const page = await ui("/ui/deliveries?source=ui-pages&cursor=bm90LWEtY3Vyc29y");
    expect(page.text).toContain("cursor: not a page position");
    expect(ids(page.text)).toHaveLength(50);
  });

  it("offers the bulk replay of what a failed filter shows", async () => {
    const page = await ui("/ui/deliveries?source=ui-filter&status=failed");
    expect(page.text).toContain('href="/ui/replay?source=ui-filter"');
    expect((await ui("/ui/deliveries?source=ui-filter")).text).not.toContain('href="/ui/replay');
  });
});

describe("GET /ui/deliveries?id= (lookup)", () => {
  it("goes straight to the one delivery with that id in any configured source", async () => {
    await putDelivery({ source: "github", id: "lookup-one" });
    const result = await ui("/ui/deliveries?id=lookup-one");
    expect(result.status).toBe(303);
    expect(result.headers.get("location")).toBe("/ui/deliveries/github/lookup-one");
  });

  it("looks within one source when one is given, even one not configured", async () => {
    await putDelivery({ source: "ui-lookup", id: "lookup-src" });
    expect((await ui("/ui/deliveries?id=lookup-src&source=ui-lookup")).headers.get("location")).toBe("/ui/deliveries/ui-lookup/lookup-src");
    const missing = await ui("/ui/deliveries?id=lookup-src&source=stripe");
    expect(missing.status).toBe(200);
    expect(missing.text).toContain("No delivery has the id “lookup-src” in the source stripe.");
  });

  it("lists every source's delivery when several share the id", async () => {
    await putDelivery({ source: "stripe", id: "lookup-shared", receivedAtMs: Date.now() - 2_000 });
    await putDelivery({ source: "standard", id: "lookup-shared", receivedAtMs: Date.now() - 1_000 });
    const page = await ui("/ui/deliveries?id=lookup-shared");
    expect(page.status).toBe(200);
    expect(rows(page.text).map((row) => row[1])).toEqual(["standard", "stripe"]);
    expect(page.text).toContain("2 deliveries have the id “lookup-shared”");
  });

  it("says when no configured source has it", async () => {
    const page = await ui("/ui/deliveries?id=lookup-nowhere");
    expect(page.text).toContain("No delivery has the id “lookup-nowhere” in any configured source.");
  });

  it("encodes an id with slashes and query characters in its link", async () => {
    await putDelivery({ source: "ui-lookup", id: "a/b?c=d#e" });
    const result = await ui(`/ui/deliveries?source=ui-lookup&id=${encodeURIComponent("a/b?c=d#e")}`);
    expect(result.headers.get("location")).toBe("/ui/deliveries/ui-lookup/a%2Fb%3Fc%3Dd%23e");
    const page = await ui(result.headers.get("location")!);
    expect(page.status).toBe(200);
    expect(page.text).toContain('<span class="mono">a/b?c=d#e</span>');
  });
});

describe("GET /ui/deliveries/:source/:id", () => {
  it("shows every field, the request headers and the attempt history", async () => {
    await putDelivery({
      source: "ui-detail",
      id: "full",
      eventType: "payment_intent.succeeded",
      status: "failed",
      attempts: 2,
      error: "PermanentError: payment_intent.succeeded has no integer data.object.amount",
      headers: [
        ["content-type", "application/json"],
        ["stripe-signature", "t=1,v1=abc"],
      ],
      attemptLog: [
        { attempt: 1, at: "2026-03-01T10:00:00.000Z", ms: 850, outcome: "retry", error: "Error: HTTP 503" },
        { attempt: 2, at: "2026-03-01T10:00:02.000Z", ms: 12, outcome: "failed", error: "PermanentError: no amount" },
      ],
    });
    const page = await ui("/ui/deliveries/ui-detail/full");
    expect(page.status).toBe(200);
    expect(page.text).toContain("payment_intent.succeeded has no integer data.object.amount");
    expect(page.text).toContain("<dt>Attempts</dt><dd>2</dd>");
    expect(page.text).toMatch(/<dt>Received<\/dt><dd><time datetime="[^"]+">\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC<\/time>/);
    const tables = page.text.split("<table>").slice(1);
    expect(rows(`<table>${tables[0]}`)).toEqual([
      ["1", expect.stringContaining("2026-03-01 10:00:00 UTC"), "850 ms", "retry", "Error: HTTP 503"],
      ["2", expect.stringContaining("2026-03-01 10:00:02 UTC"), "12 ms", "failed", "PermanentError: no amount"],
    ]);
    expect(rows(`<table>${tables[1]}`)).toEqual([
      ["content-type", "application/json"],
      ["stripe-signature", "t=1,v1=abc"],
    ]);
    // A failed delivery can be replayed from here; the button is a POST form.
    expect(page.text).toContain('<form method="post" action="/ui/deliveries/ui-detail/full/replay"><button type="submit">Replay</button></form>');
  });

  it("says a failed delivery's handler failed, instead of \"not yet\" handled", async () => {
    await putDelivery({ source: "ui-detail", id: "failed-handled", status: "failed", attempts: 5, error: "boom" });
    const page = await ui("/ui/deliveries/ui-detail/failed-handled");
    expect(page.text).toMatch(/<dt>Handled<\/dt><dd><span class="muted">no: its handler failed/);
    expect(page.text).not.toContain("not yet");
  });

  it("numbers the runs after a replay by their round, and names the replay's own row", async () => {
    await putDelivery({
      source: "ui-detail",
      id: "replayed",
      status: "done",
      attempts: 1,
      attemptLog: [
        { attempt: 1, at: "2026-03-01T10:00:00.000Z", ms: 5, outcome: "failed", error: "PermanentError: no amount" },
        { attempt: null, at: "2026-03-01T10:10:00.000Z", ms: null, outcome: "replayed", error: null },
        { attempt: 1, at: "2026-03-01T10:10:01.000Z", ms: 7, outcome: "done", error: null },
      ],
    });
    const page = await ui("/ui/deliveries/ui-detail/replayed");
    expect(rows(`<table>${page.text.split("<table>")[1]}`).map((row) => row[0])).toEqual(["1", "replay 1", "1 after replay 1"]);
  });

  it("shows how many duplicates came and when the last did, or that none did", async () => {
    const body = new TextEncoder().encode("{}");
    const delivery = { source: "ui-detail", id: "dup", eventType: null, body, receivedAtMs: Date.parse("2026-03-01T10:00:00.000Z") };
    await recordDelivery(delivery);
    expect(await recordDelivery({ ...delivery, receivedAtMs: Date.parse("2026-03-01T10:00:05.000Z") })).toBe("duplicate");
    expect(await recordDelivery({ ...delivery, receivedAtMs: Date.parse("2026-03-01T10:01:00.000Z") })).toBe("duplicate");
    const page = await ui("/ui/deliveries/ui-detail/dup");
    expect(page.text).toMatch(/<dt>Duplicates<\/dt><dd>2 copies answered &quot;duplicate&quot; \(the provider sent it again\), the last <time datetime="2026-03-01T10:01:00.000Z">/);
    await putDelivery({ source: "ui-detail", id: "no-dup" });
    expect((await ui("/ui/deliveries/ui-detail/no-dup")).text).toContain("<dt>Duplicates</dt><dd><span class=\"muted\">none");
  });

  it("shows a repeated deferral once, with how many times it happened", async () => {
    await putDelivery({
      source: "ui-detail",
      id: "deferred",
      attemptLog: [
        { attempt: 1, at: "2026-03-01T10:00:00.000Z", ms: 40, outcome: "retry", error: "RetryAfterError: the forward destination answered 503" },
        { attempt: null, at: "2026-03-01T10:05:00.000Z", ms: 9, outcome: "deferred", error: "the forward destination has 10 requests in flight already (not counted)", count: 12 },
      ],
    });
    const page = await ui("/ui/deliveries/ui-detail/deferred");
    expect(rows(`<table>${page.text.split("<table>")[1]}`).map((row) => row[3])).toEqual(["retry", "deferred ×12"]);
  });

  it("pretty-prints a JSON body keeping every number as sent", async () => {
    await putDelivery({ source: "ui-detail", id: "json", body: '{"amount":12345678901234567890,"nested":{"list":[1,2.50,{}],"empty":[]},"s":"a,b:{c}"}' });
    const page = await ui("/ui/deliveries/ui-detail/json");
    expect(page.text).toContain("JSON, pretty-printed");
    const shown = /<pre class="block" tabindex="0"><code>([\s\S]*?)<\/code><\/pre>/.exec(page.text)?.[1];
    expect(shown).toBe(
      [
        "{",
        "  &quot;amount&quot;: 12345678901234567890,",
        "  &quot;nested&quot;: {",
        "    &quot;list&quot;: [",
        "      1,",
        "      2.50,",
        "      {}",
        "    ],",
        "    &quot;empty&quot;: []",
        "  },",
        "  &quot;s&quot;: &quot;a,b:{c}&quot;",
        "}",
      ].join("\n"),
    );
  });

  it("shows a UTF-8 body that is not JSON as text, and anything else as base64", async () => {
    await putDelivery({ source: "ui-detail", id: "form", body: "amount=100&currency=eur" });
    await putDelivery({ source: "ui-detail", id: "binary", body: new Uint8Array([0xff, 0xfe, 0x00, 0x80]) });
    const text = await ui("/ui/deliveries/ui-detail/form");
    expect(text.text).toContain("text (UTF-8)");
    expect(text.text).toContain("<code>amount=100&amp;currency=eur</code>");
    const binary = await ui("/ui/deliveries/ui-detail/binary");
    expect(binary.text).toContain("binary, shown as base64");
    expect(binary.text).toContain("<code>//4AgA==</code>");
  });

  it("says when retention cleared the body and the headers, and offers no replay", async () => {
    await putDelivery({ source: "ui-detail", id: "pruned", body: null, headers: null, status: "done", attempts: 1 });
    const page = await ui("/ui/deliveries/ui-detail/pruned");
    expect(page.text).toContain("Cleared by retention");
    expect(page.text).toContain("Not stored: received before the inbox kept headers, or cleared by retention");
    expect(page.text).toContain("it cannot be replayed");
    expect(page.text).not.toContain("/replay");
    expect(page.text).not.toContain("/pruned/body");
  });

  it("offers a force replay, behind a confirmation page, for a done delivery", async () => {
    await putDelivery({ source: "ui-detail", id: "done", status: "done", attempts: 1 });
    const page = await ui("/ui/deliveries/ui-detail/done");
    expect(page.text).toContain('<a class="button button-secondary" href="/ui/deliveries/ui-detail/done/replay">Force replay…</a>');
    expect(page.text).not.toContain('method="post" action="/ui/deliveries/ui-detail/done/replay"');
  });

  it("answers 404 with a page for an unknown delivery", async () => {
    const page = await ui("/ui/deliveries/ui-detail/nope");
    expect(page.status).toBe(404);
    expect(page.text).toContain("No such delivery");
  });
});

describe("escaping: delivery data is shown as text", () => {
  it("renders a body of <script> as text, escaped, in the delivery's page", async () => {
    await putDelivery({ source: "ui-xss", id: "body", body: HOSTILE });
    const page = await ui("/ui/deliveries/ui-xss/body");
    expect(page.text).toContain(`<code>${ESCAPED}</code>`);
    expect(page.text).not.toContain("<script>alert");
    expect(page.text).not.toContain("<img src=x");
  });

  it("escapes a JSON body's strings too", async () => {
    await putDelivery({ source: "ui-xss", id: "json", body: JSON.stringify({ note: "</code></pre><script>alert(1)</script>" }) });
    const page = await ui("/ui/deliveries/ui-xss/json");
    expect(page.text).toContain("&lt;/code&gt;&lt;/pre&gt;&lt;script&gt;alert(1)&lt;/script&gt;");
    expect(page.text).not.toContain("<script>alert");
  });

  it("escapes the id, event type, error and headers, in the list and the delivery's page", async () => {
    const id = `"><svg onload=alert(1)>`;
    await putDelivery({
      source: "ui-xss",
      id,
      eventType: HOSTILE,
      status: "failed",
      error: HOSTILE,
      headers: [[`x-evil"><b>`, HOSTILE]],
      attemptLog: [{ attempt: 1, at: null, ms: null, outcome: "failed", error: HOSTILE }],
    });
    const list = await ui("/ui/deliveries?source=ui-xss&status=failed");
    const detail = await ui(`/ui/deliveries/ui-xss/${encodeURIComponent(id)}`);
    for (const page of [list, detail]) {
      expect(page.status).toBe(200);
      expect(page.text).toContain(ESCAPED);
      expect(page.text).not.toMatch(/<script>alert|<img src=x|<svg onload|<b>/);
    }
    expect(detail.text).toContain("&quot;&gt;&lt;svg onload=alert(1)&gt;");
    expect(detail.text).toContain("x-evil&quot;&gt;&lt;b&gt;");
    // In an attribute (the error's full text on hover) the quote cannot close it.
    expect(list.text).toContain(`title="${ESCAPED}"`);
  });

  it("escapes a lookup id in the not-found notice and the search field", async () => {
    const page = await ui(`/ui/deliveries?id=${encodeURIComponent(HOSTILE)}`);
    expect(page.text).toContain(`“${ESCAPED}”`);
    expect(page.text).toContain(`value="${ESCAPED}"`);
    expect(page.text).not.toContain("<script>alert");
  });
});

describe("GET /ui/deliveries/:source/:id/body", () => {
  it("downloads the bytes as received, as an attachment no browser renders", async () => {
    const bytes = new Uint8Array([0x3c, 0x73, 0x63, 0x72, 0x69, 0x70, 0x74, 0x3e, 0xff, 0x00]);
    await putDelivery({ source: "ui-download", id: 'evt"1/x', body: bytes });
    const download = await ui(`/ui/deliveries/ui-download/${encodeURIComponent('evt"1/x')}/body`);
    expect(download.status).toBe(200);
    expect(download.headers.get("content-type")).toBe("application/octet-stream");
    expect(download.headers.get("x-content-type-options")).toBe("nosniff");
    expect(download.headers.get("content-disposition")).toBe('attachment; filename="ui-download-evt_1_x.bin"');
    expect(download.headers.get("cache-control")).toBe("no-store");
    const response = await (await import("./client")).uiRequest(`/ui/deliveries/ui-download/${encodeURIComponent('evt"1/x')}/body`);
    const raw = new Uint8Array(await (await (await import("cloudflare:workers")).exports.default.fetch(response)).arrayBuffer());
    expect([...raw]).toEqual([...bytes]);
  });

  it("answers 404 when retention cleared the body", async () => {
    await putDelivery({ source: "ui-download", id: "pruned", body: null, status: "done" });
    expect((await ui("/ui/deliveries/ui-download/pruned/body")).status).toBe(404);
  });

  it("needs a session like every page", async () => {
    const result = await ui("/ui/deliveries/ui-download/pruned/body", { session: null });
    expect(result.status).toBe(303);
  });

  it("names the file with safe characters only", () => {
    expect(downloadName("stripe", 'a"b\r\nc/..\\d')).toBe("stripe-a_b__c_.._d.bin");
  });
});
