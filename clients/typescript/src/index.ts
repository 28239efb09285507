/**
 * memchentic: long-term memory for AI agents, over the HTTP API of `memchentic serve`.
 *
 *     import { Memchentic } from "memchentic";
 *     const mem = new Memchentic({ baseUrl: "http://127.0.0.1:8077", apiKey: "mck_..." });
 *     await mem.add("Alice prefers green tea", { type: "preference" });
 *     const hits = await mem.search("what does alice drink");
 */

export { DEFAULT_BASE_URL, DEFAULT_TIMEOUT_MS, Directory, Memchentic, snakeCase, toWire } from "./client.js";
export type { ClientOptions } from "./client.js";
export {
  AuthError,
  ConnectionError,
  EmbedderError,
  ForbiddenError,
  LimitError,
  MemchenticError,
  NamespaceError,
  NotFoundError,
  ServerError,
  StoreError,
  ValidationError,
  errorFromAnswer,
} from "./errors.js";
export type { ErrorBody } from "./errors.js";
export { SseParser } from "./events.js";
export type { SseMessage } from "./events.js";
export { API_VERSION } from "./schema.js";
export type * from "./schema.js";
export type * from "./types.js";
