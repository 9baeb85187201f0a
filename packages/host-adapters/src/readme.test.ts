import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { MAX_ERROR_BODY_BYTES, MAX_REDIRECTS } from './http-guards.js';
import { MAX_MESSAGE_CHARS } from './provider-errors.js';
import { DEFAULT_RETRY } from './retry.js';
import { DEFAULT_MAX_EVENT_BYTES } from './sse.js';
import { DEFAULT_EVENT_TIMEOUT_MS, DEFAULT_IDLE_TIMEOUT_MS } from './transport.js';

const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8').replace(/\s+/g, ' ');

describe('README', () => {
  it('states the limits the code applies', () => {
    expect(readme).toContain(`read up to **${MAX_ERROR_BODY_BYTES / 1024} KiB**`);
    expect(readme).toContain(`(default **${DEFAULT_MAX_EVENT_BYTES / 1024 / 1024} MiB**)`);
    expect(readme).toContain(`at most ${MAX_REDIRECTS} times in a row`);
    expect(readme).toContain(`at most ${MAX_MESSAGE_CHARS} characters`);
    expect(readme).toContain(`| \`idleTimeoutMs\` | ${DEFAULT_IDLE_TIMEOUT_MS / 60_000} min |`);
    expect(readme).toContain(`| \`eventTimeoutMs\` | ${DEFAULT_EVENT_TIMEOUT_MS / 60_000} min |`);
    expect(readme).toContain('| `deadlineMs` | none |');
  });

  it('states the retry policy the code applies', () => {
    const { initialDelayMs, maxDelayMs, maxRetries, maxRetryAfterMs } = DEFAULT_RETRY;
    expect(readme).toContain(
      `(${initialDelayMs} ms doubling, at most ${maxDelayMs / 1000} s, half of each step random; ${maxRetries} retries by default)`,
    );
    expect(readme).toContain(`longer than \`retry.maxRetryAfterMs\` (${maxRetryAfterMs / 1000} s)`);
  });
});
