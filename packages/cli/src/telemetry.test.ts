import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { EventSink } from '@teamwire/core';
import { afterEach, describe, expect, it } from 'vitest';
import { startCommandTelemetry } from './telemetry.js';

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
});

function io(env: Record<string, string>) {
  const errors: string[] = [];
  return { env, stderr: { write: (text: string) => errors.push(text) }, errors };
}

describe('command telemetry', () => {
  it('is off without OTEL_EXPORTER_OTLP_ENDPOINT: the sink as given, no trace context', async () => {
    const sink: EventSink = { publish() {} };
    const quiet = io({});
    const telemetry = await startCommandTelemetry(quiet, 'serve');
    expect(telemetry.events(sink)).toBe(sink);
    expect(telemetry.teamOptions).toEqual({});
    expect(quiet.errors).toEqual([]);
  });

  it('exports a turn to the endpoint the environment names, as the named service', async () => {
    const bodies: { path: string; body: string }[] = [];
    const server = createServer((req, res) => {
      let body = '';
      req.on('data', (chunk: Buffer) => (body += chunk.toString('utf8')));
      req.on('end', () => {
        bodies.push({ path: req.url ?? '', body });
        res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    closers.push(() => new Promise<void>((resolve) => server.close(() => resolve())));
    const { port } = server.address() as AddressInfo;
    const loud = io({
      OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${port}`,
      OTEL_SERVICE_NAME: 'review-team',
    });
    const telemetry = await startCommandTelemetry(loud, 'worker');
    const forwarded: string[] = [];
    const sink = telemetry.events({ publish: (_agent, event) => forwarded.push(event.type) });
    expect(telemetry.teamOptions.traceContext).toBeDefined();
    sink.publish('alice', { type: 'turn.start', reason: 'host' });
    sink.publish('alice', { type: 'turn.end', stopReason: 'end_turn', steps: 0, text: '' });
    await telemetry.close();
    expect(forwarded).toEqual(['turn.start', 'turn.end']);
    const traces = bodies
      .filter((b) => b.path === '/v1/traces')
      .map((b) => b.body)
      .join('\n');
    expect(traces).toContain('invoke_agent alice');
    expect(traces).toContain('review-team');
    expect(loud.errors.join('')).toContain(
      `exporting traces and metrics to http://127.0.0.1:${port}`,
    );
  });
});
