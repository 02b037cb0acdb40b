/**
 * The one typed error of the HTTP edge. Routes throw it; the app's error
 * handler turns it into `{ error, issues }` with its status.
 */
export interface Issue {
  path: string;
  message: string;
}

export class HttpError extends Error {
  override name = "HttpError";
  constructor(
    readonly status: 400 | 401 | 403 | 404 | 409 | 413 | 415 | 422 | 503,
    message: string,
    readonly issues: Issue[] = [],
  ) {
    super(message);
  }
}
