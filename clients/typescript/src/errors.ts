/**
 * The exception tree of the client, mirroring memchentic's Python one:
 *
 *     MemchenticError            root: `code`, `message`, `status` (HTTP, 0 when none), `field`
 *     ├── ValidationError        bad input (422, `invalid`): names the `field` and the `rule`
 *     │   ├── NamespaceError     malformed or unknown namespace (`invalid_namespace`)
 *     │   └── LimitError         more work than a server setting allows (413): `setting`, `limit`
 *     ├── NotFoundError          no such memory, or one the key may not see (404): `id`
 *     ├── ForbiddenError         the key sees it but may not change it, or needs an admin key (403)
 *     ├── StoreError             the server's store cannot be used (503)
 *     ├── EmbedderError          the server's embedder failed (502)
 *     ├── AuthError              the server refused the API key (401)
 *     ├── ConnectionError        no answer: the server is unreachable or the call timed out
 *     └── ServerError            any other error answer
 *
 * The server answers every error as `{"error": {"code", "message", "field"?, ...}}`;
 * `details` keeps that whole object.
 */

/** The `error` object of an error answer. */
export interface ErrorBody {
  code: string;
  message: string;
  field?: string;
  rule?: string;
  id?: string;
  setting?: string;
  limit?: string;
  [key: string]: unknown;
}

/** Root of every error this client throws on purpose. */
export class MemchenticError extends Error {
  /** The server's stable, machine-readable code (`not_found`, `invalid`...). */
  readonly code: string;
  /** The HTTP status of the answer; 0 when there was none. */
  readonly status: number;
  /** The request field at fault, when the server names one. */
  readonly field: string | undefined;
  /** The whole `error` object of the answer. */
  readonly details: ErrorBody;

  constructor(body: ErrorBody, status: number) {
    super(body.message);
    this.name = new.target.name;
    this.code = body.code;
    this.status = status;
    this.field = body.field;
    this.details = body;
  }
}

/** Input that breaks a rule (HTTP 422); names the `field` and the `rule`. */
export class ValidationError extends MemchenticError {
  /** The rule the input broke (the message when the server names none). */
  readonly rule: string;

  constructor(body: ErrorBody, status: number) {
    super(body, status);
    this.rule = body.rule ?? body.message;
  }
}

/** A namespace that is malformed, unknown or not allowed here. */
export class NamespaceError extends ValidationError {}

/** A call that asks for more work than a server setting allows (HTTP 413). */
export class LimitError extends ValidationError {
  /** The server setting that sets the limit. */
  readonly setting: string | undefined;
  /** The limit's value. */
  readonly limit: number | undefined;

  constructor(body: ErrorBody, status: number) {
    super(body, status);
    this.setting = body.setting;
    this.limit = body.limit === undefined ? undefined : Number(body.limit);
  }
}

/** No memory with that id, or one the key may not see: the same answer (HTTP 404). */
export class NotFoundError extends MemchenticError {
  /** The id that was asked for. */
  readonly id: string | undefined;

  constructor(body: ErrorBody, status: number) {
    super(body, status);
    this.id = body.id;
  }
}

/** The key may read the memory but not change it, or the route needs an admin key (403). */
export class ForbiddenError extends MemchenticError {
  readonly id: string | undefined;

  constructor(body: ErrorBody, status: number) {
    super(body, status);
    this.id = body.id;
  }
}

/** The server's store cannot be opened or used (HTTP 503). */
export class StoreError extends MemchenticError {}

/** The server's embedder is unavailable or answered badly (HTTP 502). */
export class EmbedderError extends MemchenticError {}

/** The server refused the API key: missing, unknown or revoked (HTTP 401). */
export class AuthError extends MemchenticError {}

/** No answer at all: the server could not be reached, or the call ran past `timeout`. */
export class ConnectionError extends MemchenticError {}

/** An error answer that no other class describes (a server fault, a body too large). */
export class ServerError extends MemchenticError {}

type ErrorClass = new (body: ErrorBody, status: number) => MemchenticError;

/** The class of each code the server sends (as the Python client maps them). */
const BY_CODE: Record<string, ErrorClass> = {
  invalid: ValidationError,
  invalid_namespace: NamespaceError,
  limit_exceeded: LimitError,
  not_found: NotFoundError,
  forbidden: ForbiddenError,
  admin_required: ForbiddenError,
  unauthorized: AuthError,
  store_error: StoreError,
  not_a_store: StoreError,
  schema_too_new: StoreError,
  store_corrupt: StoreError,
  embedder_mismatch: StoreError,
  store_timeout: StoreError,
  embedder_error: EmbedderError,
};

/** The class of each status, for a code the client does not know. */
const BY_STATUS: Record<number, ErrorClass> = {
  401: AuthError,
  403: ForbiddenError,
  404: NotFoundError,
  413: LimitError,
  422: ValidationError,
  502: EmbedderError,
  503: StoreError,
};

/** The exception an error answer stands for, from its status and parsed JSON body. */
export function errorFromAnswer(status: number, payload: unknown): MemchenticError {
  const found = (payload as { error?: unknown } | null)?.error;
  if (!found || typeof found !== "object") {
    return new ServerError({ code: "error", message: `HTTP ${status}` }, status);
  }
  const info = found as Partial<ErrorBody>;
  const body: ErrorBody = {
    ...info,
    code: String(info.code ?? "error"),
    message: String(info.message ?? `HTTP ${status}`),
  };
  const cls = BY_CODE[body.code] ?? BY_STATUS[status] ?? ServerError;
  return new cls(body, status);
}
