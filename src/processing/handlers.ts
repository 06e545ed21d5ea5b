/**
 * What the consumer does with a handler's input: the event it receives, parsed from the stored body.
 * The handler API itself (types, registry, errors) is src/handler-api/.
 */

/**
 * The event a handler receives: the JSON body, or for form-encoded bodies (Twilio, Slack
 * commands) an object of its fields, or else the text.
 */
export function parseEvent(body: Uint8Array): unknown {
  const text = new TextDecoder().decode(body);
  try {
    return JSON.parse(text);
  } catch {
    if (/^[^=&\s]+=[^&]*(&[^=&\s]+=[^&]*)*$/.test(text.trim())) return Object.fromEntries(new URLSearchParams(text.trim()));
    return text;
  }
}
