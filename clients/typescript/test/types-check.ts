// Compiled (never run) by `npm test`: the option types are the API's fields in
// camelCase, the answers are the generated schema's, and a snake_case or unknown
// option is a compile error (issue 34, item 4).
import { Memchentic, NotFoundError, ValidationError } from "../src/index.js";
import type { HitOut, MemoryOut, WriteOut } from "../src/index.js";

export async function usage(mem: Memchentic): Promise<void> {
  const written: WriteOut = await mem.add("x", { sessionId: "s", pathHint: "a/b", ttlDays: 3, expiresAt: new Date() });
  const hits: HitOut[] = await mem.search("x", { includeTrace: true, pathHint: "a", asOf: new Date() });
  const record: MemoryOut = hits[0]!.memory;
  record.session_id satisfies string | null | undefined;
  written.status satisfies string;
  await mem.deleteAll({ userId: "alice" });
  await mem.list({ type: ["fact", "note"], tags: ["t"], includeExpired: true, filters: { project: "x" } });
  await mem.context("q", { budgetTokens: 100, recentTurns: 2 }).then((ctx) => ctx.text satisfies string);
  for await (const event of mem.streamEvents({ types: ["memory.added"], signal: AbortSignal.timeout(1) })) {
    event.memory_id satisfies string | null | undefined;
  }
  // @ts-expect-error: options are camelCase
  await mem.add("x", { session_id: "s" });
  // @ts-expect-error: no such option
  await mem.search("x", { nonsense: 1 });
  // @ts-expect-error: kind is "entry" or "guide"
  await mem.add("x", { kind: "other" });
  try {
    await mem.get("id");
  } catch (error) {
    if (error instanceof NotFoundError) error.id satisfies string | undefined;
    if (error instanceof ValidationError) error.field satisfies string | undefined;
  }
}
