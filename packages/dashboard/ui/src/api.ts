import type { MessageBody } from '../../src/snapshot-record.js';
import type { DashboardSnapshot } from '../../src/view-model.js';

/** A failed request, with the server's `{ error: { code, message } }` when it sent one. */
export class ApiError extends Error {
  readonly status: number;
  readonly code: string;

  constructor(status: number, code: string, message: string) {
    super(message);
    this.name = 'ApiError';
    this.status = status;
    this.code = code;
  }
}

/** The steering actions of `POST api/actions/<name>`. */
export type ActionName = 'message' | 'task' | 'interrupt' | 'shutdown' | 'decide';

/** Any thrown value as an {@link ApiError}. */
export function toApiError(error: unknown): ApiError {
  if (error instanceof ApiError) return error;
  const message = error instanceof Error ? error.message : String(error);
  return new ApiError(0, 'NETWORK_ERROR', message || 'the request failed');
}

async function errorOf(res: Response): Promise<ApiError> {
  let code = `HTTP_${res.status}`;
  let message = res.statusText || 'the request failed';
  try {
    const body = (await res.json()) as { error?: { code?: unknown; message?: unknown } } | null;
    const error = body?.error;
    if (typeof error?.code === 'string') code = error.code;
    if (typeof error?.message === 'string') message = error.message;
  } catch {
    // Not JSON: keep the HTTP status.
  }
  return new ApiError(res.status, code, message);
}

async function request(url: string, init: RequestInit): Promise<Response> {
  let res: Response;
  try {
    res = await fetch(url, { cache: 'no-store', credentials: 'same-origin', ...init });
  } catch (error) {
    throw toApiError(error);
  }
  if (!res.ok) throw await errorOf(res);
  return res;
}

/** `GET api/snapshot` (relative: the page may be mounted under a path prefix). */
export async function fetchSnapshot(token: string): Promise<DashboardSnapshot> {
  const res = await request('api/snapshot', {
    headers: { authorization: `Bearer ${token}`, accept: 'application/json' },
  });
  const snapshot = (await res.json()) as DashboardSnapshot;
  if (snapshot === null || typeof snapshot !== 'object' || !Array.isArray(snapshot.records)) {
    throw new ApiError(
      res.status,
      'BAD_SNAPSHOT',
      'the server sent something that is not a snapshot',
    );
  }
  if (snapshot.version !== 1) {
    throw new ApiError(
      res.status,
      'BAD_SNAPSHOT',
      `snapshot version ${String(snapshot.version)} is not one this page reads (1)`,
    );
  }
  return snapshot;
}

/** `GET api/messages/<seq>`: the whole text of a message the snapshot cut. */
export async function fetchMessage(token: string, seq: number): Promise<MessageBody> {
  const res = await request(`api/messages/${seq}`, {
    headers: { authorization: `Bearer ${token}`, accept: 'application/json' },
  });
  const body = (await res.json()) as MessageBody | null;
  if (body === null || typeof body.text !== 'string' || typeof body.more !== 'number') {
    throw new ApiError(
      res.status,
      'BAD_MESSAGE',
      'the server sent something that is not a message',
    );
  }
  return body;
}

/** `POST api/actions/<action>`, the token in a header (never in the URL). */
export async function postAction(
  token: string,
  action: ActionName,
  body: object,
): Promise<unknown> {
  const res = await request(`api/actions/${action}`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json',
      'x-teamwire-token': token,
    },
    body: JSON.stringify(body),
  });
  try {
    return await res.json();
  } catch {
    return null;
  }
}
