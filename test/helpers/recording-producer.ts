/** A queue producer that only records what it is asked to send: the runtime's own consumer must not race the test. */
export function recordingProducer(): { sent: unknown[]; queue: Queue } {
  const sent: unknown[] = [];
  const queue = {
    async send(body: unknown) {
      sent.push(body);
    },
    async sendBatch(messages: Iterable<MessageSendRequest>) {
      for (const message of messages) sent.push(message.body);
    },
  };
  return { sent, queue: queue as unknown as Queue };
}
