// The Vercel AI SDK example of docs/cookbook.md ("memory as tools"), run with the
// SDK's own fake model against a real server (issue 34, item 4). The cookbook
// shows examples/ai-sdk-tools.mjs verbatim: checked here too.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { after, before, it } from "node:test";

import { generateText, stepCountIs } from "ai";
import { MockLanguageModelV3 } from "ai/test";

import { Memchentic } from "../dist/index.js";
import { memoryTools } from "../examples/ai-sdk-tools.mjs";
import { startServer } from "./server.mjs";

const usage = {
  inputTokens: { total: 10, noCache: 10, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 5, text: 5, reasoning: undefined },
};

/** A model that calls each tool in `calls` in turn, then answers with `text`. */
function scriptedModel(calls, text) {
  const steps = calls.map(([toolName, input], i) => ({
    content: [{ type: "tool-call", toolCallId: `call-${i}`, toolName, input: JSON.stringify(input) }],
    finishReason: { unified: "tool-calls", raw: "tool_calls" },
    usage,
    warnings: [],
  }));
  steps.push({ content: [{ type: "text", text }], finishReason: { unified: "stop", raw: "stop" }, usage, warnings: [] });
  return new MockLanguageModelV3({ doGenerate: steps });
}

let server;
before(async () => {
  server = await startServer({ identities: ["dana"] });
});
after(async () => {
  await server?.stop();
});

it("an agent remembers with one tool and finds it again with the other", async () => {
  const mem = new Memchentic({ baseUrl: server.url, apiKey: server.keys.dana });
  const tools = memoryTools(mem);
  const model = scriptedModel(
    [
      ["remember", { content: "Dana takes her coffee black, no sugar", type: "preference" }],
      ["search", { query: "how does dana take her coffee" }],
    ],
    "Black, no sugar.",
  );
  const result = await generateText({ model, tools, prompt: "Remember my coffee order", stopWhen: stepCountIs(5) });
  assert.equal(result.text, "Black, no sugar.");
  const outputs = result.steps.flatMap((step) => step.toolResults);
  assert.equal(outputs[0].toolName, "remember");
  assert.equal(outputs[0].output.status, "added");
  assert.equal(outputs[1].toolName, "search");
  assert.equal(outputs[1].output[0].id, outputs[0].output.id, "search finds what remember saved");
  const stored = await mem.get(outputs[0].output.id);
  assert.equal(stored.type, "preference");
  assert.equal(stored.namespace, "user:dana");
  // the model saw the search result in its prompt for the last step
  const lastPrompt = JSON.stringify(model.doGenerateCalls.at(-1).prompt);
  assert.match(lastPrompt, /coffee black/);
});

it("docs/cookbook.md shows the example file as it is", () => {
  const example = readFileSync(new URL("../examples/ai-sdk-tools.mjs", import.meta.url), "utf8");
  const cookbook = readFileSync(new URL("../../../docs/cookbook.md", import.meta.url), "utf8");
  assert.ok(cookbook.includes("```js\n" + example + "```"), "copy examples/ai-sdk-tools.mjs into docs/cookbook.md");
});
