// The event stream's parser, and reconnection with Last-Event-ID across a server
// restart (issue 34, item 4).
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";

import { ConnectionError, Memchentic, SseParser } from "../dist/index.js";
import { startServer } from "./server.mjs";

describe("SseParser", () => {
  it("joins data lines, keeps the last id and retry, skips comments", () => {
    const parser = new SseParser();
    const feed = (text) => text.split("\n").map((line) => parser.feed(line)).filter(Boolean);
    assert.deepEqual(feed("retry: 1500\n\n: keepalive\n\n"), []);
    assert.equal(parser.retry, 1500);
    const [first] = feed('id: 01A\nevent: memory.added\ndata: {"a":\ndata: 1}\n\n');
    assert.deepEqual(first, { id: "01A", event: "memory.added", data: '{"a":\n1}' });
    assert.equal(parser.lastEventId, "01A");
    const [second] = feed("data:no space\n\n");
    assert.deepEqual(second, { id: undefined, event: "message", data: "no space" });
    assert.equal(parser.lastEventId, "01A", "a message without an id keeps the last one");
  });
});

describe("reconnect", () => {
  let server;
  before(async () => {
    server = await startServer({ identities: ["carol"] });
  });
  after(async () => {
    await server?.stop();
  });

  it("a dropped stream reconnects and resumes after the last event received", async () => {
    const carol = new Memchentic({ baseUrl: server.url, apiKey: server.keys.carol });
    const controller = new AbortController();
    const stream = carol.streamEvents({ since: "0", types: ["memory.added"], signal: controller.signal });
    const first = await carol.add("Before the restart: the kettle is descaled");
    const got = await stream.next();
    assert.equal(got.value.memory_id, first.id);
    await server.restart(); // the open connection drops with the old process
    const second = await carol.add("After the restart: the fridge is defrosted");
    const next = await stream.next();
    assert.equal(next.value.memory_id, second.id, "resumed after the last event: nothing replayed, nothing lost");
    controller.abort();
    assert.equal((await stream.next()).done, true);
  });

  it("without reconnect, a dropped stream is a ConnectionError", async () => {
    const carol = new Memchentic({ baseUrl: server.url, apiKey: server.keys.carol });
    const stream = carol.streamEvents({ since: "0", types: ["memory.added"], reconnect: false });
    assert.equal((await stream.next()).done, false);
    await server.restart();
    const outcome = await (async () => {
      try {
        for (;;) {
          const step = await stream.next();
          if (step.done) return "ended";
        }
      } catch (error) {
        return error instanceof ConnectionError ? "connection_error" : String(error);
      }
    })();
    assert.equal(outcome, "connection_error");
  });
});
