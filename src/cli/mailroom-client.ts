import type { PushResult } from '../account-config/account-config.service';

/** The part of a D-10 error body the command line shows. */
interface ErrorBody {
  error?: { code?: string; message?: string; details?: { fields?: { field: string; message: string }[] } };
}

export type { PushResult };

/** A refusal of the server, with every problem it named. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly fields: { field: string; message: string }[] = [],
  ) {
    super(message);
  }
}

/** The HTTP API as the command line uses it: GET and PUT /config with an admin key. */
export class MailroomClient {
  constructor(
    private readonly baseUrl: string,
    private readonly apiKey: string,
  ) {}

  exportConfig(): Promise<Record<string, unknown>> {
    return this.request('GET', '/config');
  }

  pushConfig(file: unknown, options: { dryRun: boolean; prune: boolean }): Promise<PushResult> {
    const query = new URLSearchParams({ dryRun: String(options.dryRun), prune: String(options.prune) });
    return this.request('PUT', `/config?${query.toString()}`, file);
  }

  private async request<T>(method: string, path: string, body?: unknown): Promise<T> {
    const url = `${this.baseUrl.replace(/\/+$/, '')}${path}`;
    let response: Response;
    try {
      response = await fetch(url, {
        method,
        headers: {
          Authorization: `Bearer ${this.apiKey}`,
          Accept: 'application/json',
          ...(body !== undefined && { 'Content-Type': 'application/json' }),
        },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
    } catch (err) {
      const cause = (err as { cause?: { code?: string; message?: string } }).cause;
      throw new Error(`Cannot reach Mailroom at ${this.baseUrl}: ${cause?.code ?? cause?.message ?? (err as Error).message}`, {
        cause: err,
      });
    }
    const text = await response.text();
    let parsed: unknown;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      throw new Error(`${method} ${url} answered ${response.status} with a body that is not JSON`);
    }
    if (!response.ok) {
      const error = (parsed as ErrorBody | undefined)?.error;
      throw new ApiError(response.status, error?.code ?? 'HTTP_ERROR', error?.message ?? `HTTP ${response.status}`, error?.details?.fields);
    }
    return parsed as T;
  }
}
