import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import type { SseRouteOptions } from './sse.js';

const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');

/** The README's "Server-Sent Events" section, up to the next heading of its level. */
function sseSection(): string {
  const start = readme.indexOf('## Server-Sent Events');
  expect(start).toBeGreaterThan(-1);
  const end = readme.indexOf('\n## ', start + 1);
  return readme.slice(start, end === -1 ? undefined : end);
}

/** Every route option, checked by the compiler: adding one fails typecheck until listed here. */
const SSE_OPTIONS: Record<keyof SseRouteOptions, true> = {
  heartbeatMs: true,
  retryMs: true,
  clock: true,
  presence: true,
  teamId: true,
  headers: true,
  onError: true,
};

describe('packages/dashboard/README.md: Server-Sent Events', () => {
  it('serves its example on loopback only, never on every interface', () => {
    const serves = [...sseSection().matchAll(/\bserve\(\{([^}]*)\}\)/g)].map((match) => match[1]);
    expect(serves.length).toBeGreaterThan(0);
    for (const args of serves) expect(args).toMatch(/hostname: '127\.0\.0\.1'/);
  });

  it('protects its example with a token, sent by the browser in the query string', () => {
    const section = sseSection();
    expect(section).toMatch(/app\.use\('\/events', bearerAuth\(\{ token \}\)\)/);
    expect(section).toMatch(/new EventSource\(.*params/);
    expect(section).toMatch(/URLSearchParams\(\{[^}]*\btoken\b/);
  });

  it('shows no wildcard CORS', () => {
    expect(readme).not.toMatch(/access-control-allow-origin['"]?\s*:\s*['"]\*['"]/i);
  });

  it.each(Object.keys(SSE_OPTIONS))(
    'documents the %s option in the handler options table',
    (key) => {
      expect(sseSection()).toMatch(new RegExp(`^\\|\\s*\`${key}\`\\s*\\|`, 'm'));
    },
  );

  it.each(['401', '404', '405', '400', '503', '500'])('documents the %s answer', (status) => {
    expect(sseSection()).toContain(`\`${status}\``);
  });
});
