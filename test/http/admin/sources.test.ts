// GET /admin/sources: each source's security grade, dedup key, and rotation state (the previous
// secret set, and when it last verified a delivery), through the real store.
import { describe, expect, it } from "vitest";
import { SOURCES } from "../../../src/sources";
import { githubSignature, post, secretsOf, unique } from "../../helpers/provider-signers";
import { admin } from "./client";

type Source = { source: string; provider: string; grade: Record<string, unknown> | null; dedupKey: string | null; configured: boolean; rotation: { inProgress: boolean; previousLastMatchedAt: string | null } };
const bySource = async () => Object.fromEntries(((await admin("/sources")).json.sources as Source[]).map((source) => [source.source, source]));

describe("GET /admin/sources", () => {
  it("lists every source with a grade and a dedup key", async () => {
    const sources = await bySource();
    expect(Object.keys(sources).sort()).toEqual(Object.keys(SOURCES).sort());
    expect(Object.keys(sources).length).toBeGreaterThanOrEqual(40);
    for (const source of Object.values(sources)) {
      expect(source.grade, source.source).not.toBeNull();
      expect(source.dedupKey, source.source).toBeTruthy();
    }
    expect(sources.stripe!.grade).toEqual({ bodySigned: true, timestampSigned: true, deliveryIdSigned: true, secretInClear: false });
    expect(sources.gitlab!.grade).toMatchObject({ bodySigned: false, secretInClear: true });
    expect(sources.mailgun!.grade).toMatchObject({ bodySigned: false, timestampSigned: true });
    expect(sources.adyen!.grade).toMatchObject({ bodySigned: "partly", deliveryIdSigned: true });
    expect(sources.eventgrid!.grade).toMatchObject({ secretInClear: true, deliveryIdSigned: false });
    expect(sources.twitch!.grade).toEqual({ bodySigned: true, timestampSigned: true, deliveryIdSigned: true, secretInClear: false });
    expect(sources.github!.grade).toEqual({ bodySigned: true, timestampSigned: false, deliveryIdSigned: false, secretInClear: false });
    expect([sources.stripe!.configured, sources.paddle!.configured]).toEqual([true, false]);
  });

  it("says when the previous secret last verified a delivery, once one was signed with it", async () => {
    expect((await bySource()).github!.rotation).toEqual({ inProgress: true, previousLastMatchedAt: null });
    const body = JSON.stringify({ zen: unique("") });
    await post("github", body, { "x-hub-signature-256": await githubSignature(body), "x-github-delivery": unique(""), "x-github-event": "ping" });
    expect((await bySource()).github!.rotation.previousLastMatchedAt).toBeNull();
    const old = JSON.stringify({ zen: unique("") });
    const answer = await post("github", old, { "x-hub-signature-256": await githubSignature(old, secretsOf("GITHUB_WEBHOOK_SECRET")[1]), "x-github-delivery": unique(""), "x-github-event": "ping" });
    expect(answer.status).toBe(200);
    expect((await bySource()).github!.rotation.previousLastMatchedAt).toMatch(/^\d{4}-\d\d-\d\dT/);
  });
});
