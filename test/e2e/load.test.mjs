// The receiver under sustained concurrent load, over real HTTP: every delivery answered 200 and
// stored once. The consumer is left out (configWithoutConsumer) so the receiver alone sets the
// pace, several hundred requests a second here: at that rate, members of a group commit that
// resumed inside the request leading their group were failed by workerd with a 500 ("Cannot
// perform I/O on behalf of a different request"). The tests inside workerd do not show that.
import autocannon from "autocannon";
import assert from "node:assert/strict";
import { after, before, it } from "node:test";
import { LocalInbox, configWithoutConsumer } from "./harness.mjs";
import { paymentEvent, stripeDeliveryByHmac } from "./signers.mjs";

const REQUESTS = 5_000;
const config = configWithoutConsumer();
const inbox = new LocalInbox({ config: config.path, migrate: true });
before(() => inbox.start());
after(async () => {
  await inbox.stop();
  config.remove();
});

it(`answers ${REQUESTS} deliveries from 16 connections (10% sent twice) with 200, each stored once`, { timeout: 240_000 }, async () => {
  let sent = 0;
  const answers = { stored: 0, duplicate: 0 };
  const failures = [];
  const result = await autocannon({
    url: `${inbox.url}/webhooks/stripe`,
    method: "POST",
    connections: 16,
    amount: REQUESTS,
    requests: [
      {
        setupRequest(request) {
          sent++;
          const id = sent % 10 === 0 ? `evt_load_${sent - 5}` : `evt_load_${sent}`;
          const { body, headers } = stripeDeliveryByHmac(paymentEvent(id, 100));
          return { ...request, body, headers };
        },
        onResponse(status, body) {
          if (status !== 200) failures.push(`${status} ${String(body).slice(0, 200)}`);
          else answers[JSON.parse(body).status]++;
        },
      },
    ],
  });
  assert.deepEqual(failures.slice(0, 5), [], `${failures.length} of ${REQUESTS} requests failed`);
  assert.equal(result.errors, 0);
  assert.equal(answers.stored + answers.duplicate, REQUESTS);
  assert.equal(answers.duplicate, REQUESTS / 10);
  const [{ rows }] = await inbox.sql("SELECT COUNT(*) AS rows FROM deliveries WHERE id LIKE 'evt_load_%'");
  assert.equal(rows, answers.stored);
});
