import type { components } from "./schema.js";

/** A problem+json document (RFC 9457) as the server answers it. */
export type Problem = components["schemas"]["Problem"];

/** The machine-readable kinds of failure: the problem's `code`. */
export type ProblemCode = Problem["code"];

/**
 * WorkgraphError is a request the server refused or failed: its answer's
 * status, the problem's `code` (what a program branches on), the
 * Retry-After the server asked for, and the request id to quote in a bug
 * report. `lease_lost` means: stop working on the item at once.
 */
export class WorkgraphError extends Error {
  /** The HTTP status of the answer. */
  readonly status: number;
  /** The problem's code; for an answer without a problem document, the code its status stands for. */
  readonly code: ProblemCode;
  /** The problem's detail (what went wrong, in words). */
  readonly detail: string;
  /** The request's id (the problem's request_id, else the X-Request-Id header); "" if none. */
  readonly requestId: string;
  /** Seconds the server asked to wait before a retry (Retry-After); undefined if it gave none. */
  readonly retryAfter: number | undefined;
  /** The whole problem document, with the members of its code (field, cycle, lease_id, ...). */
  readonly problem: Problem;
  /** The request that failed, as "METHOD /path". */
  readonly request: string;

  constructor(request: string, status: number, problem: Problem, headers: Headers) {
    super(`${problem.detail || problem.title || problem.code} (${problem.code}, HTTP ${status}; ${request})`);
    this.name = "WorkgraphError";
    this.status = status;
    this.code = problem.code;
    this.detail = problem.detail;
    this.requestId = problem.request_id ?? headers.get("X-Request-Id") ?? "";
    this.retryAfter = parseRetryAfter(headers.get("Retry-After"), Date.now());
    this.problem = problem;
    this.request = request;
  }
}

/** isProblem reports whether err is a WorkgraphError, of the given code when one is given. */
export function isProblem(err: unknown, code?: ProblemCode): err is WorkgraphError {
  return err instanceof WorkgraphError && (code === undefined || err.code === code);
}

/**
 * toProblem makes a problem document of an error answer: the body when it is
 * one, else a document with the code the status stands for (a proxy's 502
 * page, an empty body).
 */
export function toProblem(status: number, body: unknown): Problem {
  if (typeof body === "object" && body !== null && typeof (body as Problem).code === "string") {
    return body as Problem;
  }
  const code = codeForStatus(status);
  const detail = typeof body === "string" ? body.slice(0, 200) : "";
  return { type: "about:blank", title: `HTTP ${status}`, status, detail, code };
}

function codeForStatus(status: number): ProblemCode {
  switch (status) {
    case 400:
      return "invalid_argument";
    case 401:
      return "unauthenticated";
    case 403:
      return "forbidden";
    case 404:
      return "not_found";
    case 405:
      return "method_not_allowed";
    case 409:
      return "conflict";
    case 413:
      return "payload_too_large";
    case 415:
      return "unsupported_media_type";
    case 431:
      return "header_too_large";
    case 429:
      return "rate_limited";
    case 502:
    case 503:
    case 504:
      return "unavailable";
  }
  return "internal";
}

/** parseRetryAfter reads delay-seconds or an HTTP date (relative to now, in ms); undefined when absent or unreadable. */
export function parseRetryAfter(v: string | null, now: number): number | undefined {
  if (v === null || v === "") {
    return undefined;
  }
  if (/^\d+$/.test(v)) {
    return Number(v);
  }
  const t = Date.parse(v);
  return Number.isNaN(t) ? undefined : Math.max(0, Math.ceil((t - now) / 1000));
}
