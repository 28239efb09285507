import { tool } from "ai";
import { z } from "zod";

/** Memory as two tools an AI SDK agent can call: `remember` and `search`. */
export function memoryTools(mem, { userId } = {}) {
  return {
    remember: tool({
      description: "Save something worth remembering about the user or the task.",
      inputSchema: z.object({
        content: z.string().describe("One self-contained fact, preference or decision"),
        type: z.enum(["fact", "preference", "decision", "note"]).optional(),
      }),
      execute: async ({ content, type }) => {
        const result = await mem.add(content, { type, userId });
        return { status: result.status, id: result.id };
      },
    }),
    search: tool({
      description: "Look up what was remembered before answering.",
      inputSchema: z.object({ query: z.string() }),
      execute: async ({ query }) => {
        const hits = await mem.search(query, { limit: 5, userId });
        return hits.map((hit) => ({ id: hit.id, text: hit.text, score: hit.score }));
      },
    }),
  };
}
