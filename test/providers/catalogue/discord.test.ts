// Discord's answers. Interactions want an interaction response within 3 s: a PING {"type":1}; a
// command or a modal submit is stored and answered DEFERRED_CHANNEL_MESSAGE_WITH_SOURCE
// {"type":5}, a component DEFERRED_UPDATE_MESSAGE {"type":6}, so the user's handler follows up with
// the interaction's token; autocomplete gets no choices. Webhook Events stay 204. Every request is
// signed with real Ed25519 keys by tweetnacl, an implementation independent of the Web Crypto the
// verifier uses.
import nacl from "tweetnacl";
import { describe, expect, it } from "vitest";
import { sql } from "../../../src/sql";
import { send } from "../../helpers/catalogue";
import { rows } from "../../helpers/store-db";

const keys = nacl.sign.keyPair();
const other = nacl.sign.keyPair();
const hex = (bytes: Uint8Array) => [...bytes].map((byte) => byte.toString(16).padStart(2, "0")).join("");
const env = { DISCORD_WEBHOOK_SECRET: hex(keys.publicKey) };
const snowflake = () => String(BigInt(Date.now()) * 4_194_304n + BigInt(Math.floor(Math.random() * 4_194_304)));

/** Discord's headers: Ed25519 over `{timestamp}{body}`, hex. */
function signed(body: string, secretKey = keys.secretKey, timestamp = Math.floor(Date.now() / 1000)): Record<string, string> {
  const signature = nacl.sign.detached(new TextEncoder().encode(`${timestamp}${body}`), secretKey);
  return { "content-type": "application/json", "x-signature-timestamp": String(timestamp), "x-signature-ed25519": hex(signature) };
}

/** An interaction as Discord sends it (fields from its docs' interaction object). */
function interaction(type: number, data: Record<string, unknown>): string {
  return JSON.stringify({
    app_permissions: "442368",
    application_id: "1234567890123456789",
    channel_id: "1234567890123456780",
    data,
    guild_id: "1234567890123456781",
    id: snowflake(),
    locale: "en-US",
    member: { user: { id: "53908232506183680", username: "mason" } },
    token: `aW50ZXJhY3Rpb246${crypto.randomUUID()}`,
    type,
    version: 1,
  });
}

const storedWith = (body: string) => rows<{ event_type: string | null; status: string }>(sql`SELECT event_type, status FROM deliveries WHERE source = 'discord' AND body = ${new TextEncoder().encode(body)}`);

describe("discord interactions", () => {
  it("stores an application command and answers it DEFERRED_CHANNEL_MESSAGE_WITH_SOURCE, its copy too", async () => {
    const body = interaction(2, { id: "771825006014889984", name: "blep", type: 1, options: [{ name: "animal", type: 3, value: "animal_dog" }] });
    const answer = await send("discord", { body, headers: signed(body), env });
    expect([answer.status, answer.text, answer.headers.get("content-type")]).toEqual([200, '{"type":5}', "application/json"]);
    expect(await storedWith(body)).toEqual([{ event_type: "APPLICATION_COMMAND", status: "received" }]);
    // A copy (a retry of the same signed request): the same answer, still one row.
    const again = await send("discord", { body, headers: signed(body), env });
    expect([again.status, again.text]).toEqual([200, '{"type":5}']);
    expect(await storedWith(body)).toHaveLength(1);
  });

  it("answers a message component DEFERRED_UPDATE_MESSAGE (the user sees no loading state)", async () => {
    const body = interaction(3, { custom_id: "click_one", component_type: 2 });
    const answer = await send("discord", { body, headers: signed(body), env });
    expect([answer.status, answer.json]).toEqual([200, { type: 6 }]);
    expect(await storedWith(body)).toEqual([{ event_type: "MESSAGE_COMPONENT", status: "received" }]);
  });

  it("answers a modal submit DEFERRED_CHANNEL_MESSAGE_WITH_SOURCE (type 6 is for components only)", async () => {
    const body = interaction(5, { custom_id: "my_modal", components: [{ type: 1, components: [{ type: 4, custom_id: "name", value: "Mason" }] }] });
    const answer = await send("discord", { body, headers: signed(body), env });
    expect([answer.status, answer.json]).toEqual([200, { type: 5 }]);
    expect(await storedWith(body)).toEqual([{ event_type: "MODAL_SUBMIT", status: "received" }]);
  });

  it("answers autocomplete, which cannot be deferred, with no choices", async () => {
    const body = interaction(4, { id: "771825006014889984", name: "blep", type: 1, options: [{ name: "animal", type: 3, value: "do", focused: true }] });
    const answer = await send("discord", { body, headers: signed(body), env });
    expect([answer.status, answer.json]).toEqual([200, { type: 8, data: { choices: [] } }]);
    expect(await storedWith(body)).toEqual([{ event_type: "APPLICATION_COMMAND_AUTOCOMPLETE", status: "received" }]);
  });

  it("answers a PING {\"type\":1} and stores nothing", async () => {
    const body = JSON.stringify({ application_id: "1234567890123456789", id: snowflake(), token: "aW50ZXJhY3Rpb24", type: 1, version: 1 });
    const answer = await send("discord", { body, headers: signed(body), env });
    expect([answer.status, answer.text]).toEqual([200, '{"type":1}']);
    expect(await storedWith(body)).toHaveLength(0);
  });

  it("refuses a command signed by another key, or past its timestamp, and stores nothing", async () => {
    const body = interaction(2, { id: "771825006014889984", name: "blep", type: 1 });
    expect((await send("discord", { body, headers: signed(body, other.secretKey), env })).status).toBe(401);
    expect((await send("discord", { body, headers: signed(body, keys.secretKey, Math.floor(Date.now() / 1000) - 3600), env })).status).toBe(401);
    expect(await storedWith(body)).toHaveLength(0);
  });
});

describe("discord webhook events", () => {
  it("stores an event and answers 204 with no body, its type read from the event", async () => {
    const body = JSON.stringify({
      version: 1,
      application_id: "1234567890123456789",
      type: 1,
      event: { type: "APPLICATION_AUTHORIZED", timestamp: new Date().toISOString(), data: { integration_type: 1, scopes: ["applications.commands"], user: { id: snowflake(), username: "mason" } } },
    });
    const answer = await send("discord", { body, headers: signed(body), env });
    expect([answer.status, answer.text]).toEqual([204, ""]);
    expect(await storedWith(body)).toEqual([{ event_type: "APPLICATION_AUTHORIZED", status: "received" }]);
  });

  it("answers the Webhook Events PING (type 0) 204 and stores nothing", async () => {
    const body = JSON.stringify({ version: 1, application_id: "1234567890123456789", type: 0 });
    const answer = await send("discord", { body, headers: signed(body), env });
    expect([answer.status, answer.text]).toEqual([204, ""]);
    expect(await storedWith(body)).toHaveLength(0);
  });
});
