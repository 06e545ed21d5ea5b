/**
 * The runs a queue message body carries: itself, or a bundle's runs (src/processing/messages.ts).
 * Test producers record runs, so that what a test expects does not depend on how they were packed.
 */
export function runsOf(body: unknown): unknown[] {
  if (body !== null && typeof body === "object" && Array.isArray((body as { runs?: unknown }).runs)) return [...(body as { runs: unknown[] }).runs];
  return [body];
}

/** A queue producer that only records what it is asked to send: the runtime's own consumer must not race the test. */
export function recordingProducer(): { sent: unknown[]; messages: unknown[]; queue: Queue } {
  const sent: unknown[] = [];
  const messages: unknown[] = [];
  const queue = {
    async send(body: unknown) {
      messages.push(body);
      sent.push(...runsOf(body));
    },
    async sendBatch(batch: Iterable<MessageSendRequest>) {
      for (const message of batch) {
        messages.push(message.body);
        sent.push(...runsOf(message.body));
      }
    },
  };
  return { sent, messages, queue: queue as unknown as Queue };
}
