/**
 * The one typed error of the HTTP edge. Routes throw it; the app's error
 * handler turns it into `{ error, issues }` with its status, and sends
 * `headers` with it (Retry-After on a 429).
 */
export interface Issue {
  path: string;
  message: string;
}

/** The statuses the edge answers with on purpose. */
export type HttpStatus =
  | 400
  | 401
  | 403
  | 404
  | 409
  | 413
  | 415
  | 422
  | 429
  | 503;

export class HttpError extends Error {
  override name = "HttpError";
  constructor(
    readonly status: HttpStatus,
    message: string,
    readonly issues: Issue[] = [],
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
  }
}
