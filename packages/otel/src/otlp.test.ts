import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { TeamError } from '@teamwire/core';
import { afterEach, describe, expect, it } from 'vitest';
import { otlpEndpointFromEnv, startOtlpTelemetry } from './otlp.js';

interface Received {
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
}

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
});

/** A loopback OTLP/HTTP receiver that keeps every request. */
async function receiver(): Promise<{ url: string; received: Received[] }> {
  const received: Received[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      received.push({
        path: req.url ?? '',
        headers: req.headers,
        body: Buffer.concat(chunks).toString('utf8'),
      });
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  closers.push(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}`, received };
}

describe('OTLP/HTTP export', () => {
  it('sends a turn’s spans and the team metrics to the endpoint', async () => {
    const { url, received } = await receiver();
    const otlp = startOtlpTelemetry({ endpoint: `${url}/`, serviceName: 'team-test' });
    const { events } = otlp.telemetry;
    events.publish('lead', { type: 'turn.start', reason: 'host' });
    events.publish('lead', {
      type: 'model.step',
      step: 1,
      usage: { inputTokens: 12, outputTokens: 3 },
    });
    events.publish('lead', { type: 'turn.end', stopReason: 'end_turn', steps: 1, text: 'done' });
    await otlp.shutdown();

    const traces = received.filter((r) => r.path === '/v1/traces');
    expect(traces.length).toBeGreaterThan(0);
    expect(traces[0]?.headers['content-type']).toContain('application/json');
    const resourceSpans = traces.flatMap(
      (r) =>
        (
          JSON.parse(r.body) as {
            resourceSpans: {
              resource: { attributes: { key: string; value: { stringValue?: string } }[] };
              scopeSpans: { spans: { name: string }[] }[];
            }[];
          }
        ).resourceSpans,
    );
    const service = resourceSpans[0]?.resource.attributes.find((a) => a.key === 'service.name');
    expect(service?.value.stringValue).toBe('team-test');
    const names = resourceSpans.flatMap((r) =>
      r.scopeSpans.flatMap((s) => s.spans.map((span) => span.name)),
    );
    expect(names.sort()).toEqual(['chat', 'invoke_agent lead']);
    expect(traces.map((r) => r.body).join('')).not.toContain('done');

    const metrics = received
      .filter((r) => r.path === '/v1/metrics')
      .map((r) => r.body)
      .join('');
    expect(metrics).toContain('gen_ai.client.token.usage');
    expect(metrics).toContain('teamwire.turn.duration');
  });

  it('takes the endpoint from OTEL_EXPORTER_OTLP_ENDPOINT, and refuses one that is not http(s)', () => {
    expect(otlpEndpointFromEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: ' http://collector:4318 ' })).toBe(
      'http://collector:4318',
    );
    expect(otlpEndpointFromEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: '' })).toBeUndefined();
    expect(otlpEndpointFromEnv({})).toBeUndefined();
    for (const endpoint of ['collector:4318x', 'ftp://collector', 'not a url']) {
      let caught: unknown;
      try {
        startOtlpTelemetry({ endpoint });
      } catch (error) {
        caught = error;
      }
      expect(TeamError.hasCode(caught, 'INVALID_ARGUMENT')).toBe(true);
    }
  });
});
