/**
 * `Memchentic`: the HTTP API of `memchentic serve`, with the operation names of the
 * Python `Memory` and `Client` in camelCase (`add_many` -> `addMany`). Options are
 * camelCase and go out as the API's snake_case; answers are the API's JSON as the
 * OpenAPI document (src/schema.ts) types it. Only the platform's `fetch` is used.
 */

import { ConnectionError, MemchenticError, ValidationError, errorFromAnswer } from "./errors.js";
import { SseParser, lines } from "./events.js";
import type * as S from "./schema.js";
import type * as T from "./types.js";

export interface ClientOptions {
  /** The server, e.g. `http://127.0.0.1:8077` (default). */
  baseUrl?: string;
  /** A key from `memchentic keys create`: every call runs as its identity. */
  apiKey?: string;
  /** Milliseconds per request (default 30000); the event stream has none. */
  timeout?: number;
  /** A `fetch` to use instead of the global one (tests, proxies, custom agents). */
  fetch?: typeof fetch;
  /** Headers sent with every request. */
  headers?: Record<string, string>;
}

export const DEFAULT_BASE_URL = "http://127.0.0.1:8077";
export const DEFAULT_TIMEOUT_MS = 30_000;
/** Delay before reconnecting the event stream when the server suggests none. */
const DEFAULT_RETRY_MS = 2_000;

type Params = Record<string, unknown>;

interface Request {
  query?: Params | undefined;
  body?: unknown;
  call?: T.CallOptions | undefined;
  accept?: string;
  headers?: Record<string, string>;
}

/** `userId` -> `user_id` (a snake_case key stays as it is). */
export function snakeCase(key: string): string {
  return key.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
}

/** An options object with its top-level keys in snake_case and undefined values dropped;
 * nested values (metadata, filters) are sent as given. */
export function toWire(options: object | undefined): Params {
  const out: Params = {};
  for (const [key, value] of Object.entries(options ?? {})) {
    if (value !== undefined) out[snakeCase(key)] = value;
  }
  return out;
}

/** The error of input the client refuses before asking the server (as the server would). */
function invalid(field: string, rule: string): ValidationError {
  return new ValidationError({ code: "invalid", message: `${field}: ${rule}`, field, rule }, 0);
}

/** A path segment (ids are plain, but never trust that). */
function seg(value: string, field = "id"): string {
  if (typeof value !== "string" || !value) {
    throw invalid(field, "must be a non-empty string");
  }
  return encodeURIComponent(value);
}

function teamPath(team: string): string {
  const at = team.indexOf(":");
  const kind = at === -1 ? "" : team.slice(0, at).replace(/^ring$/, "group");
  const name = at === -1 ? "" : team.slice(at + 1);
  if (!name || (kind !== "group" && kind !== "org")) {
    throw invalid("team", "must be group:NAME (or ring:NAME) or org:NAME");
  }
  return `/v1/${kind}s/${seg(name, "team")}`;
}

function isAbort(error: unknown): boolean {
  return error instanceof Error && (error.name === "AbortError" || error.name === "TimeoutError");
}

/** A signal that aborts with the first of `signals` (`AbortSignal.any` where the
 * platform has it: Node.js 20.3+, current browsers). */
function anySignal(signals: AbortSignal[]): AbortSignal {
  if (typeof AbortSignal.any === "function") return AbortSignal.any(signals);
  const controller = new AbortController();
  for (const signal of signals) {
    if (signal.aborted) {
      controller.abort(signal.reason);
      break;
    }
    signal.addEventListener("abort", () => controller.abort(signal.reason), { once: true });
  }
  return controller.signal;
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    function done(): void {
      clearTimeout(timer);
      signal?.removeEventListener("abort", done);
      resolve();
    }
    signal?.addEventListener("abort", done, { once: true });
  });
}

/** The client. Every method returns a promise (the streams: async iterators). */
export class Memchentic {
  readonly baseUrl: string;
  readonly timeout: number;
  private readonly apiKey: string | undefined;
  private readonly fetchImpl: typeof fetch;
  private readonly extraHeaders: Record<string, string>;
  /** Identities, groups, orgs and grants, as this key may manage them. */
  readonly directory: Directory;

  constructor(options: ClientOptions = {}) {
    this.baseUrl = (options.baseUrl ?? DEFAULT_BASE_URL).replace(/\/+$/, "");
    this.apiKey = options.apiKey;
    this.timeout = options.timeout ?? DEFAULT_TIMEOUT_MS;
    this.fetchImpl = options.fetch ?? globalThis.fetch.bind(globalThis);
    this.extraHeaders = { ...options.headers };
    this.directory = new Directory(this);
  }

  // --- plumbing: the only I/O -------------------------------------------------------------
  private url(path: string, query?: Params): string {
    const params = new URLSearchParams();
    for (const [key, value] of Object.entries(query ?? {})) {
      for (const item of Array.isArray(value) ? value : [value]) {
        if (item === undefined || item === null) continue;
        params.append(key, item instanceof Date ? item.toISOString() : String(item));
      }
    }
    const text = params.toString();
    return `${this.baseUrl}${path}${text ? `?${text}` : ""}`;
  }

  private headers(extra: Record<string, string>): Record<string, string> {
    const auth: Record<string, string> = this.apiKey
      ? { Authorization: `Bearer ${this.apiKey}` }
      : {};
    return { ...this.extraHeaders, ...auth, ...extra };
  }

  /** Send a request; the answer's response once it is not an error answer. */
  private async open(
    method: string,
    path: string,
    request: Request,
    signal: AbortSignal | undefined,
  ): Promise<Response> {
    const headers = this.headers({ Accept: request.accept ?? "application/json", ...request.headers });
    const init: RequestInit = { method, headers };
    if (request.body !== undefined) {
      headers["Content-Type"] = "application/json";
      init.body = JSON.stringify(request.body);
    }
    if (signal) init.signal = signal;
    let response: Response;
    try {
      response = await this.fetchImpl(this.url(path, request.query), init);
    } catch (error) {
      if (request.call?.signal?.aborted) throw error; // the caller's own abort
      const timedOut = isAbort(error);
      const message = timedOut
        ? `${method} ${path}: no answer within ${request.call?.timeout ?? this.timeout} ms`
        : `${method} ${path}: ${(error as Error).message}`;
      throw new ConnectionError({ code: timedOut ? "timeout" : "connection_error", message }, 0);
    }
    if (!response.ok) throw await failure(response);
    return response;
  }

  /** @internal One JSON request and its decoded answer. */
  async send<R>(method: string, path: string, request: Request = {}): Promise<R> {
    const limit = request.call?.timeout ?? this.timeout;
    const signals = [AbortSignal.timeout(limit)];
    if (request.call?.signal) signals.push(request.call.signal);
    const signal = signals.length > 1 ? anySignal(signals) : signals[0];
    const response = await this.open(method, path, request, signal);
    const type = response.headers.get("content-type") ?? "";
    return (type.startsWith("application/json") ? await response.json() : await response.text()) as R;
  }

  // --- writes ---------------------------------------------------------------------------
  /** Remember one memory. */
  add(content: string, options?: T.AddOptions, call?: T.CallOptions): Promise<S.WriteOut> {
    return this.send("POST", "/v1/memories", { body: { ...toWire(options), content }, call });
  }

  /** Alias of `add`. */
  remember(content: string, options?: T.AddOptions, call?: T.CallOptions): Promise<S.WriteOut> {
    return this.add(content, options, call);
  }

  /** Remember several memories with one request (and one embedding batch); `common`
   * options apply to every item that does not set them. */
  async addMany(
    items: Iterable<T.AddManyItem>,
    common?: T.AddOptions,
    call?: T.CallOptions,
  ): Promise<S.WriteOut[]> {
    const shared = toWire(common);
    const batch = [...items].map((item) =>
      typeof item === "string" ? { ...shared, content: item } : { ...shared, ...toWire(item) },
    );
    if (!batch.length) return [];
    return this.send("POST", "/v1/memories/batch", { body: { items: batch }, call });
  }

  /** Edit a memory; moves `updated_at`. */
  revise(
    memoryId: string,
    content?: string | null,
    changes?: T.ReviseOptions,
    call?: T.CallOptions,
  ): Promise<S.WriteOut> {
    const body = { ...toWire(changes), ...(content != null ? { content } : {}) };
    return this.send("PATCH", `/v1/memories/${seg(memoryId)}`, { body, call });
  }

  /** Adjust confidence, importance or validity without resetting the age. */
  improve(memoryId: string, changes: T.ImproveOptions, call?: T.CallOptions): Promise<S.WriteOut> {
    return this.send("POST", `/v1/memories/${seg(memoryId)}/improve`, { body: toWire(changes), call });
  }

  /** Forget one memory. */
  delete(memoryId: string, call?: T.CallOptions): Promise<S.WriteOut> {
    return this.send("DELETE", `/v1/memories/${seg(memoryId)}`, { call });
  }

  /** Alias of `delete`. */
  forget(memoryId: string, call?: T.CallOptions): Promise<S.WriteOut> {
    return this.delete(memoryId, call);
  }

  /** Forget every memory of exactly one scope; the number deleted. */
  async deleteAll(scope: T.DeleteAllScope, call?: T.CallOptions): Promise<number> {
    const body = Object.fromEntries(Object.entries(toWire(scope)).filter(([, v]) => v !== null));
    const found = await this.send<S.CountOut>("POST", "/v1/memories/delete_all", { body, call });
    return found.deleted;
  }

  pin(memoryId: string, call?: T.CallOptions): Promise<S.WriteOut> {
    return this.send("POST", `/v1/memories/${seg(memoryId)}/pin`, { call });
  }

  unpin(memoryId: string, call?: T.CallOptions): Promise<S.WriteOut> {
    return this.send("POST", `/v1/memories/${seg(memoryId)}/unpin`, { call });
  }

  /** Bring a superseded or expired memory back live. */
  restore(memoryId: string, call?: T.CallOptions): Promise<S.WriteOut> {
    return this.send("POST", `/v1/memories/${seg(memoryId)}/restore`, { call });
  }

  /** Apply `add` / `revise` / `delete` / `none` operations in order. */
  manage(
    operations: T.ManageOperation[],
    scope?: T.ManageScope,
    call?: T.CallOptions,
  ): Promise<S.WriteOut[]> {
    const body = { operations: operations.map((op) => toWire(op)), ...toWire(scope) };
    return this.send("POST", "/v1/manage", { body, call });
  }

  // --- reads ----------------------------------------------------------------------------
  /** The memories that best answer `query`. */
  search(query: string, options?: T.SearchOptions, call?: T.CallOptions): Promise<S.HitOut[]> {
    return this.send("POST", "/v1/search", { body: { ...toWire(options), query }, call });
  }

  /** The memories about one entity, newest first. */
  recall(options: T.RecallOptions, call?: T.CallOptions): Promise<S.HitOut[]> {
    return this.send("POST", "/v1/recall", { body: toWire(options), call });
  }

  /** Open one memory; `NotFoundError` also when the key may not see it. */
  get(memoryId: string, options?: { touch?: boolean }, call?: T.CallOptions): Promise<S.MemoryOut> {
    return this.send("GET", `/v1/memories/${seg(memoryId)}`, { query: toWire(options), call });
  }

  /** Memories in scope, newest first. */
  list(options: T.ListOptions = {}, call?: T.CallOptions): Promise<S.MemoryOut[]> {
    const { type, tags, filters, ...rest } = options;
    const query: Params = { ...toWire(rest), type, tag: tags };
    if (filters != null) query.filters = JSON.stringify(filters);
    return this.send("GET", "/v1/memories", { query, call });
  }

  /** How a memory came to be: every version, oldest first. */
  history(memoryId: string, call?: T.CallOptions): Promise<S.VersionOut[]> {
    return this.send("GET", `/v1/memories/${seg(memoryId)}/history`, { call });
  }

  // --- graph ----------------------------------------------------------------------------
  /** Connect two memories with a typed edge. */
  relate(
    source: string,
    target: string,
    kind: string,
    options: T.RelateOptions = {},
    call?: T.CallOptions,
  ): Promise<S.EdgeOut> {
    const body = { source, target, kind, strength: options.strength ?? 1.0, metadata: options.metadata ?? null };
    return this.send("POST", "/v1/edges", { body, call });
  }

  /** Remove an edge; false when there was none the key could change. */
  async deleteEdge(edgeId: string, call?: T.CallOptions): Promise<boolean> {
    const found = await this.send<S.DeletedOut>("DELETE", `/v1/edges/${seg(edgeId)}`, { call });
    return found.deleted;
  }

  edges(memoryId: string, options?: { kind?: string | null }, call?: T.CallOptions): Promise<S.EdgeOut[]> {
    return this.send("GET", `/v1/memories/${seg(memoryId)}/edges`, { query: toWire(options), call });
  }

  neighbors(
    memoryId: string,
    options?: { depth?: number; limit?: number },
    call?: T.CallOptions,
  ): Promise<T.Neighbour[]> {
    return this.send("GET", `/v1/memories/${seg(memoryId)}/neighbors`, { query: toWire(options), call });
  }

  entities(options?: T.EntitiesOptions, call?: T.CallOptions): Promise<Record<string, unknown>> {
    return this.send("GET", "/v1/entities", { query: toWire(options), call });
  }

  /** Cited passages, and an answer when the server has a chat model. */
  ask(question: string, options?: T.AskOptions, call?: T.CallOptions): Promise<T.Answer> {
    return this.send("POST", "/v1/ask", { body: { ...toWire(options), question }, call });
  }

  consolidate(options?: T.ConsolidateOptions, call?: T.CallOptions): Promise<T.ConsolidationReport> {
    return this.send("POST", "/v1/consolidate", { body: toWire(options), call });
  }

  // --- sessions -------------------------------------------------------------------------
  /** Log one turn of a conversation. */
  recordTurn(role: string, content: string, options?: T.TurnOptions, call?: T.CallOptions): Promise<S.TurnOut> {
    return this.send("POST", "/v1/turns", { body: { ...toWire(options), role, content }, call });
  }

  /** `recordTurn` for a chat message `{role, content, metadata?}`. */
  addMessage(message: T.Message, options?: T.TurnOptions, call?: T.CallOptions): Promise<S.TurnOut> {
    if (!message || typeof message.role !== "string" || typeof message.content !== "string") {
      throw invalid("message", "must be an object with 'role' and 'content'");
    }
    const merged = { metadata: message.metadata, ...options };
    return this.recordTurn(message.role, message.content, merged, call);
  }

  /** A session's turns, oldest first. */
  getHistory(sessionId?: string | null, options?: T.HistoryOptions, call?: T.CallOptions): Promise<S.TurnOut[]> {
    return this.send("GET", "/v1/turns", { query: { ...toWire(options), session_id: sessionId }, call });
  }

  listSessions(scope?: T.SessionsScope, call?: T.CallOptions): Promise<S.SessionOut[]> {
    return this.send("GET", "/v1/sessions", { query: toWire(scope), call });
  }

  summarizeSession(
    sessionId?: string | null,
    options?: T.SummarizeOptions,
    call?: T.CallOptions,
  ): Promise<S.WriteOut> {
    return this.send("POST", "/v1/sessions/summarize", { body: { ...toWire(options), session_id: sessionId ?? null }, call });
  }

  /** Remember something for this session only; a second write of the same `key` replaces it. */
  addWorking(content: string, options?: T.WorkingOptions, call?: T.CallOptions): Promise<S.WriteOut> {
    return this.send("POST", "/v1/working", { body: { ...toWire(options), content }, call });
  }

  /** The live working memories of a session that this key can read, oldest first. */
  workingMemory(
    sessionId?: string | null,
    options?: T.WorkingMemoryOptions,
    call?: T.CallOptions,
  ): Promise<S.MemoryOut[]> {
    return this.send("GET", "/v1/working", { query: { ...toWire(options), session_id: sessionId }, call });
  }

  // --- context and learning -------------------------------------------------------------
  /** A block of memory for a prompt; `.text` is the prompt block. */
  context(query?: string | null, options?: T.ContextOptions, call?: T.CallOptions): Promise<T.Context> {
    return this.send("POST", "/v1/context", { body: { ...toWire(options), query: query ?? null }, call });
  }

  /** Alias of `context`. */
  buildContext(query?: string | null, options?: T.ContextOptions, call?: T.CallOptions): Promise<T.Context> {
    return this.context(query, options, call);
  }

  /** Memories extracted from a conversation (text, or turns `{role, content}`). */
  learn(
    messages: string | Array<string | T.Message>,
    options?: T.LearnOptions,
    call?: T.CallOptions,
  ): Promise<S.WriteOut[]> {
    return this.send("POST", "/v1/learn", { body: { ...toWire(options), messages }, call });
  }

  // --- upkeep ---------------------------------------------------------------------------
  stats(options?: T.StatsOptions, call?: T.CallOptions): Promise<Record<string, unknown>> {
    return this.send("GET", "/v1/stats", { query: toWire(options), call });
  }

  /** Delete what expired long ago or decayed away (an admin key). */
  gc(options?: T.MaintenanceOptions, call?: T.CallOptions): Promise<Record<string, unknown>> {
    return this.send("POST", "/v1/gc", { body: { dry_run: false, ...toWire(options) }, call });
  }

  maintain(options?: T.MaintenanceOptions, call?: T.CallOptions): Promise<T.MaintenanceReport> {
    return this.send("POST", "/v1/maintain", { body: { dry_run: false, ...toWire(options) }, call });
  }

  /** Empty the store of memories (an admin key); the number deleted. */
  async reset(call?: T.CallOptions): Promise<number> {
    const found = await this.send<S.CountOut>("POST", "/v1/reset", { call });
    return found.deleted;
  }

  /** Every memory this key can read, with edges and versions, one JSON Lines record
   * at a time (the format `memchentic import` reads). */
  async *export(options: { vectors?: boolean; signal?: AbortSignal } = {}): AsyncGenerator<Record<string, unknown>> {
    const query = { vectors: options.vectors ?? false };
    const request: Request = { query, accept: "application/x-ndjson", call: { signal: options.signal } };
    const response = await this.open("GET", "/v1/export", request, options.signal);
    if (!response.body) return;
    for await (const line of lines(response.body)) {
      if (line.trim()) yield JSON.parse(line) as Record<string, unknown>;
    }
  }

  // --- events ---------------------------------------------------------------------------
  /** Stored events after `since` that this key may see, oldest first. */
  events(options: T.EventsOptions = {}, call?: T.CallOptions): Promise<S.EventOut[]> {
    const query = { since: options.since, type: options.types, limit: options.limit ?? 100 };
    return this.send("GET", "/v1/events/log", { query, call });
  }

  /**
   * Events as they happen (server-sent events), for as long as the caller iterates:
   * `for await (const event of mem.streamEvents({types: ["memory.added"]}))`.
   * Aborting `signal` (or leaving the loop) ends it. With `reconnect` (the default) a
   * dropped connection is opened again and resumes after the last event received.
   */
  async *streamEvents(options: T.StreamEventsOptions = {}): AsyncGenerator<S.EventOut> {
    const { signal, reconnect = true, maxRetries = 5 } = options;
    const parser = new SseParser();
    const query = { since: options.since, type: options.types };
    let failures = 0;
    while (!signal?.aborted) {
      const controller = new AbortController();
      const stop = (): void => controller.abort();
      signal?.addEventListener("abort", stop, { once: true });
      const resume: Record<string, string> = parser.lastEventId ? { "Last-Event-ID": parser.lastEventId } : {};
      try {
        const request: Request = { query, accept: "text/event-stream", headers: resume, call: { signal } };
        const response = await this.open("GET", "/v1/events", request, controller.signal);
        failures = 0;
        if (!response.body) return;
        for await (const line of lines(response.body)) {
          const message = parser.feed(line);
          if (message) yield JSON.parse(message.data) as S.EventOut;
        }
      } catch (error) {
        if (signal?.aborted) return;
        if (!(error instanceof ConnectionError) && !(error instanceof TypeError)) throw error;
        failures += 1;
        if (!reconnect || failures > maxRetries) throw asConnectionError(error);
      } finally {
        signal?.removeEventListener("abort", stop);
        controller.abort();
      }
      if (!reconnect) return;
      await sleep(parser.retry ?? DEFAULT_RETRY_MS, signal);
    }
  }

  // --- the key --------------------------------------------------------------------------
  /** The key's record and the namespaces it can read. */
  me(call?: T.CallOptions): Promise<Record<string, unknown>> {
    return this.send("GET", "/v1/me", { call });
  }
}

function asConnectionError(error: unknown): MemchenticError {
  if (error instanceof MemchenticError) return error;
  const message = `event stream: ${(error as Error).message}`;
  return new ConnectionError({ code: "connection_error", message }, 0);
}

async function failure(response: Response): Promise<MemchenticError> {
  let payload: unknown = null;
  try {
    payload = await response.json();
  } catch {
    payload = null;
  }
  return errorFromAnswer(response.status, payload);
}

/** Identities, groups, orgs, invitations and grants over HTTP (`mem.directory`). */
export class Directory {
  constructor(private readonly client: Memchentic) {}

  identities(kind?: "user" | "agent" | null, call?: T.CallOptions): Promise<T.Identity[]> {
    return this.client.send("GET", "/v1/identities", { query: { kind }, call });
  }

  createIdentity(name: string, kind: "user" | "agent" = "user", call?: T.CallOptions): Promise<T.Identity> {
    return this.client.send("POST", "/v1/identities", { body: { name, kind }, call });
  }

  renameIdentity(key: string, newName: string, call?: T.CallOptions): Promise<T.Identity> {
    return this.client.send("PATCH", `/v1/identities/${seg(key, "key")}`, { body: { name: newName }, call });
  }

  teams(kind: "group" | "org", call?: T.CallOptions): Promise<T.Team[]> {
    if (kind !== "group" && kind !== "org") teamPath(kind); // the same ValidationError
    return this.client.send("GET", `/v1/${kind}s`, { call });
  }

  createGroup(name: string, options: { admins?: string[]; members?: string[] } = {}, call?: T.CallOptions): Promise<T.Team> {
    const body = { name, admins: options.admins ?? [], members: options.members ?? [] };
    return this.client.send("POST", "/v1/groups", { body, call });
  }

  createOrg(name: string, options: { admins?: string[]; members?: string[] } = {}, call?: T.CallOptions): Promise<T.Team> {
    const body = { name, admins: options.admins ?? [], members: options.members ?? [] };
    return this.client.send("POST", "/v1/orgs", { body, call });
  }

  renameTeam(team: string, newName: string, call?: T.CallOptions): Promise<T.Team> {
    return this.client.send("PATCH", teamPath(team), { body: { name: newName }, call });
  }

  members(team: string, call?: T.CallOptions): Promise<T.Membership[]> {
    return this.client.send("GET", `${teamPath(team)}/members`, { call });
  }

  /** Add a member (an org admin adding to an org invites: the answer's `status` says). */
  addMember(
    team: string,
    identity: string,
    options: { role?: string; active?: boolean } = {},
    call?: T.CallOptions,
  ): Promise<T.Membership | T.Invitation> {
    const body = { identity, role: options.role ?? "member", active: options.active ?? true };
    return this.client.send("POST", `${teamPath(team)}/members`, { body, call });
  }

  /** The key's pending invitations (every one, for an admin key), a page at a time. */
  invitations(
    options: { kind?: "group" | "org" | null; limit?: number; offset?: number } = {},
    call?: T.CallOptions,
  ): Promise<T.Invitation[]> {
    const query = { kind: options.kind, limit: options.limit, offset: options.offset || undefined };
    return this.client.send("GET", "/v1/invitations", { query, call });
  }

  /** A team's pending invitations (its admins), a page at a time. */
  teamInvitations(
    team: string,
    options: { limit?: number; offset?: number } = {},
    call?: T.CallOptions,
  ): Promise<T.Invitation[]> {
    const query = { limit: options.limit, offset: options.offset || undefined };
    return this.client.send("GET", `${teamPath(team)}/invitations`, { query, call });
  }

  /** Withdraw a pending invitation (a team admin); false when there was none. */
  async withdraw(team: string, identity: string, call?: T.CallOptions): Promise<boolean> {
    const path = `${teamPath(team)}/invitations/${seg(identity, "identity")}`;
    const found = await this.client.send<S.DeletedOut>("DELETE", path, { call });
    return found.deleted;
  }

  accept(team: string, call?: T.CallOptions): Promise<T.Membership> {
    return this.client.send("POST", `${teamPath(team)}/accept`, { call });
  }

  async decline(team: string, call?: T.CallOptions): Promise<boolean> {
    const found = await this.client.send<S.DeletedOut>("POST", `${teamPath(team)}/decline`, { call });
    return found.deleted;
  }

  async removeMember(team: string, identity: string, call?: T.CallOptions): Promise<boolean> {
    const path = `${teamPath(team)}/members/${seg(identity, "identity")}`;
    const found = await this.client.send<S.DeletedOut>("DELETE", path, { call });
    return found.deleted;
  }

  grant(namespace: string, grantee: string, call?: T.CallOptions): Promise<T.Grant> {
    return this.client.send("POST", "/v1/grants", { body: { namespace, grantee }, call });
  }

  async revoke(namespace: string, grantee: string, call?: T.CallOptions): Promise<boolean> {
    const found = await this.client.send<S.DeletedOut>("POST", "/v1/grants/revoke", { body: { namespace, grantee }, call });
    return found.deleted;
  }

  grants(namespace?: string | null, call?: T.CallOptions): Promise<T.Grant[]> {
    return this.client.send("GET", "/v1/grants", { query: { namespace }, call });
  }
}
