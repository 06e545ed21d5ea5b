// What a handler receives (docs/handlers.md): the parsed event, and which handler a
// delivery reaches.
import { describe, expect, it } from "vitest";
import { defineHandlers, type Handler } from "../../../src/handler-api";
import { findHandler } from "../../../src/handler-api/registry";
import { parseEvent } from "../../../src/processing/handlers";

const bytes = (text: string) => new TextEncoder().encode(text);

describe("parseEvent", () => {
  it("parses a JSON body", () => {
    expect(parseEvent(bytes('{"type":"invoice.paid","data":{"amount":100}}'))).toEqual({ type: "invoice.paid", data: { amount: 100 } });
  });

  it("parses a JSON body that starts with a byte-order mark", () => {
    expect(parseEvent(new Uint8Array([0xef, 0xbb, 0xbf, ...bytes('{"ok":true}')]))).toEqual({ ok: true });
  });

  it("gives a form-encoded body (Twilio, Slack commands) as an object of its decoded fields", () => {
    const body = "MessageSid=SM123&From=%2B14158675309&Body=Hello+%26+goodbye+%2B1&Empty=";
    expect(parseEvent(bytes(body))).toEqual({ MessageSid: "SM123", From: "+14158675309", Body: "Hello & goodbye +1", Empty: "" });
  });

  it("gives a single form field as an object too", () => {
    expect(parseEvent(bytes("payload=%7B%22a%22%3A1%7D"))).toEqual({ payload: '{"a":1}' });
  });

  it.each([
    ["plain text", "hello world"],
    ["text with an = but not a form", "a = b"],
    ["a form-looking string with a bare name", "a=1&b"],
    ["an empty body", ""],
    ["truncated JSON", '{"type":"invoice.'],
  ])("falls back to the text for %s", (_name, text) => {
    expect(parseEvent(bytes(text))).toBe(text);
  });
});

describe("findHandler", () => {
  const exact: Handler = () => {};
  const anyGithub: Handler = () => {};
  const registry = defineHandlers({
    stripe: { "payment_intent.succeeded": exact },
    github: { push: exact, "*": anyGithub },
  });

  it("picks the handler of the exact event type", () => {
    expect(findHandler(registry, "stripe", "payment_intent.succeeded")).toBe(exact);
  });

  it("prefers the exact event type over \"*\"", () => {
    expect(findHandler(registry, "github", "push")).toBe(exact);
  });

  it("falls back to \"*\" for any other event type of that source, and for none", () => {
    expect(findHandler(registry, "github", "issues")).toBe(anyGithub);
    expect(findHandler(registry, "github", null)).toBe(anyGithub);
  });

  it("finds nothing for another event type of a source without \"*\" (the delivery is done, unhandled)", () => {
    expect(findHandler(registry, "stripe", "customer.updated")).toBeUndefined();
    expect(findHandler(registry, "stripe", null)).toBeUndefined();
  });

  it("finds nothing for a source with no handlers", () => {
    expect(findHandler(registry, "shopify", "orders/create")).toBeUndefined();
  });

  it("never matches inherited object keys as sources or event types", () => {
    expect(findHandler(registry, "constructor", null)).toBeUndefined();
    expect(findHandler(registry, "stripe", "toString")).toBeUndefined();
    expect(findHandler(registry, "__proto__", "push")).toBeUndefined();
  });
});
