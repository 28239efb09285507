/**
 * The option types of the client's methods (camelCase forms of the API's request
 * fields, derived from the generated schema) and the answers the OpenAPI document
 * leaves open (`context`, `ask`, `neighbors`, the directory), written from the
 * server's `to_dict` forms.
 */

import type * as S from "./schema.js";

/** `user_id` -> `userId`, at the type level. */
export type CamelCase<K extends string> = K extends `${infer Head}_${infer Tail}`
  ? `${Head}${Capitalize<CamelCase<Tail>>}`
  : K;

/** An object type with its (top-level) keys in camelCase. */
export type Camelize<T> = { [K in keyof T as K extends string ? CamelCase<K> : K]: T[K] };

type Query<R extends keyof S.Routes> = S.Routes[R]["query"];

/** A timestamp: an ISO 8601 string or a `Date`. */
export type Time = string | Date;

// --- options ----------------------------------------------------------------------------
export type AddOptions = Camelize<Omit<S.AddRequest, "content">>;
/** One memory of `addMany`: its content, or every field of `add`. */
export type AddManyItem = string | Camelize<S.AddRequest>;
export type ReviseOptions = Camelize<Omit<S.ReviseRequest, "content">>;
export type ImproveOptions = Camelize<S.ImproveRequest>;
export type DeleteAllScope = Camelize<S.DeleteAllRequest>;
/** One operation of `manage`: `{op: "add", content, ...}`, `{op: "revise", id, ...}`,
 * `{op: "delete", id}` or `{op: "none"}`; other keys are `add`/`revise` options. */
export type ManageOperation = { op: string; id?: string; content?: string } & Record<
  string,
  unknown
>;
export type ManageScope = Camelize<Omit<S.ManageRequest, "operations">>;
export type SearchOptions = Camelize<Omit<S.SearchRequest, "query">>;
export type RecallOptions = Camelize<S.RecallRequest>;
export type ListOptions = Camelize<Omit<Query<"GET /v1/memories">, "type" | "tag" | "filters">> & {
  /** One type or several. */
  type?: string | string[] | null;
  tags?: string[] | null;
  /** A metadata filter, as for `search` (sent as JSON). */
  filters?: Record<string, unknown> | null;
};
export interface RelateOptions {
  strength?: number;
  metadata?: Record<string, unknown> | null;
}
export type EntitiesOptions = Camelize<Query<"GET /v1/entities">>;
export type AskOptions = Camelize<Omit<S.AskRequest, "question">>;
export type ConsolidateOptions = Camelize<S.ConsolidateRequest>;
export type TurnOptions = Camelize<Omit<S.TurnRequest, "role" | "content">>;
/** A chat message, as `addMessage` takes it. */
export interface Message {
  role: string;
  content: string;
  metadata?: Record<string, unknown> | null;
}
export type HistoryOptions = Camelize<Omit<Query<"GET /v1/turns">, "session_id">>;
export type SessionsScope = Camelize<Query<"GET /v1/sessions">>;
export type SummarizeOptions = Camelize<Omit<S.SummarizeRequest, "session_id">>;
export type WorkingOptions = Camelize<Omit<S.WorkingRequest, "content">>;
export type WorkingMemoryOptions = Camelize<Omit<Query<"GET /v1/working">, "session_id">>;
export type ContextOptions = Camelize<Omit<S.ContextRequest, "query">>;
export type LearnOptions = Camelize<Omit<S.LearnRequest, "messages">>;
export type StatsOptions = Camelize<Query<"GET /v1/stats">>;
export type MaintenanceOptions = Camelize<S.MaintenanceRequest>;
export interface EventsOptions {
  /** Only events after this event id. */
  since?: string | null;
  /** Only these event types (`memory.added`...). */
  types?: string[] | null;
  limit?: number;
}
export interface StreamEventsOptions {
  /** Resume after this event id; `"0"` replays the whole log first. Default: from now. */
  since?: string | null;
  /** Only these event types. */
  types?: string[] | null;
  /** Stops the stream: the iterator ends without an error. */
  signal?: AbortSignal;
  /** Reconnect when the connection drops or the server ends the stream, resuming
   * after the last event received (`Last-Event-ID`). Default: true. */
  reconnect?: boolean;
  /** Consecutive failed reconnections before the iterator throws. Default: 5. */
  maxRetries?: number;
}
/** Per-call settings every method takes as its last argument. */
export interface CallOptions {
  signal?: AbortSignal;
  /** Milliseconds for this call (default: the client's `timeout`). */
  timeout?: number;
}

// --- answers the OpenAPI document leaves open ----------------------------------------------
export interface ContextItem {
  id: string;
  text: string;
  score: number;
  section: string;
  source: string;
  type: string | null;
}
export interface ContextSection {
  name: string;
  title: string;
  /** Stable sections come first, so prompt caches hit. */
  stable: boolean;
  items: ContextItem[];
}
/** A block of memory for a prompt; `text` is the prompt block. */
export interface Context {
  query: string | null;
  session_id: string;
  budget_tokens: number | null;
  tokens: number;
  tokenizer: string;
  sections: ContextSection[];
  dropped: ContextItem[];
  text: string;
}
export interface Passage {
  citation: number;
  memory: S.MemoryOut;
  score: number;
  via: string;
}
export interface Answer {
  question: string;
  passages: Passage[];
  answer: string | null;
  answerable: boolean;
}
export interface Neighbour {
  memory: S.MemoryOut;
  depth: number;
  via: string;
  from: string;
}
export interface ConsolidationReport {
  dry_run: boolean;
  clusters: Array<Record<string, unknown>>;
}
export interface MaintenanceReport {
  dry_run: boolean;
  gc: Record<string, unknown>;
  consolidation: Record<string, unknown> | null;
  summaries: Array<Record<string, unknown>>;
  events_pruned: number | null;
}
export interface Identity {
  id: string;
  kind: "user" | "agent";
  name: string;
  created_at: string;
}
export interface Team {
  id: string;
  kind: "group" | "org";
  name: string;
  created_at: string;
}
export interface Membership {
  team_kind: string;
  team_id: string;
  identity_id: string;
  role: string;
  active: boolean;
  status?: "member";
}
export interface Invitation {
  team_kind: string;
  team_id: string;
  identity_id: string;
  role: string;
  invited_by: string | null;
  created_at: string | null;
  team_name: string | null;
  /** The invitee as the inviter named it (`bob`, `user:bob`). */
  named: string | null;
  status?: "invited";
}
export interface Grant {
  id: string;
  namespace: string;
  grantee: string;
  created_at: string;
}
