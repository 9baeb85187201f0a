import { OTLPMetricExporter } from '@opentelemetry/exporter-metrics-otlp-http';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { MeterProvider, PeriodicExportingMetricReader } from '@opentelemetry/sdk-metrics';
import { BasicTracerProvider, BatchSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { TeamError } from '@teamwire/core';
import { createTeamTelemetry, INSTRUMENTATION_NAME, type TeamTelemetry } from './telemetry.js';

/** Options of {@link startOtlpTelemetry}. */
export interface OtlpTelemetryOptions {
  /**
   * The OTLP/HTTP base URL, as `OTEL_EXPORTER_OTLP_ENDPOINT` takes it (e.g.
   * `http://localhost:4318`): traces go to `<endpoint>/v1/traces`, metrics to `<endpoint>/v1/metrics`.
   */
  endpoint: string;
  /** `service.name` of the resource; default `teamwire`. */
  serviceName?: string;
  /** How often metrics are exported (ms); default 10000. */
  metricIntervalMs?: number;
  /** Puts prompt and message text into attributes (see `TeamTelemetryOptions`); default false. */
  captureContent?: boolean;
}

/** What {@link startOtlpTelemetry} started. */
export interface OtlpTelemetry {
  /** The team telemetry, on this exporter's tracer and meter. */
  readonly telemetry: TeamTelemetry;
  /** Exports every span and metric still buffered. */
  flush(): Promise<void>;
  /** Ends the telemetry's open spans, exports what is buffered and stops the exporters. */
  shutdown(): Promise<void>;
}

/**
 * A team telemetry that exports spans and metrics over OTLP/HTTP (JSON), with its own tracer and
 * meter providers (nothing is registered globally). For a host that reads the standard
 * `OTEL_EXPORTER_OTLP_ENDPOINT`, see {@link otlpEndpointFromEnv}. A URL that is not http(s) is
 * refused with `INVALID_ARGUMENT`.
 */
export function startOtlpTelemetry(options: OtlpTelemetryOptions): OtlpTelemetry {
  const base = checkEndpoint(options.endpoint);
  const resource = resourceFromAttributes({ 'service.name': options.serviceName ?? 'teamwire' });
  const tracerProvider = new BasicTracerProvider({
    resource,
    spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter({ url: `${base}/v1/traces` }))],
  });
  const meterProvider = new MeterProvider({
    resource,
    readers: [
      new PeriodicExportingMetricReader({
        exporter: new OTLPMetricExporter({ url: `${base}/v1/metrics` }),
        exportIntervalMillis: options.metricIntervalMs ?? 10_000,
      }),
    ],
  });
  const telemetry = createTeamTelemetry({
    tracer: tracerProvider.getTracer(INSTRUMENTATION_NAME),
    meter: meterProvider.getMeter(INSTRUMENTATION_NAME),
    captureContent: options.captureContent === true,
  });
  return {
    telemetry,
    async flush() {
      await tracerProvider.forceFlush();
      await meterProvider.forceFlush();
    },
    async shutdown() {
      telemetry.close();
      await tracerProvider.shutdown();
      await meterProvider.shutdown();
    },
  };
}

/**
 * The OTLP endpoint a process was started with: `OTEL_EXPORTER_OTLP_ENDPOINT` when set and not
 * empty, else `undefined` (telemetry stays off).
 */
export function otlpEndpointFromEnv(
  env: Readonly<Record<string, string | undefined>> = process.env,
): string | undefined {
  const value = env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim();
  return value === undefined || value === '' ? undefined : value;
}

function checkEndpoint(endpoint: string): string {
  let url: URL;
  try {
    url = new URL(endpoint);
  } catch {
    throw new TeamError('INVALID_ARGUMENT', 'the OTLP endpoint must be an http(s) URL', {
      details: { option: 'endpoint' },
    });
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new TeamError('INVALID_ARGUMENT', 'the OTLP endpoint must be an http(s) URL', {
      details: { option: 'endpoint' },
    });
  }
  return endpoint.replace(/\/+$/, '');
}
