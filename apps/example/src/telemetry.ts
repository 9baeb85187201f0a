import type { EventSink, TeamService, TraceContextSource } from '@teamwire/core';
import { otlpEndpointFromEnv, startOtlpTelemetry } from '@teamwire/otel';

/** The app's telemetry: off (every method a no-op) unless `OTEL_EXPORTER_OTLP_ENDPOINT` is set. */
export interface AppTelemetry {
  /** The sink to open the team with: `sink` itself when off. */
  events(sink: EventSink): EventSink;
  /** `openTeam`'s `traceContext` option (empty when off). */
  readonly teamOptions: { traceContext?: TraceContextSource };
  /** Lets the telemetry read the opened team's roster. */
  attach(team: TeamService): void;
  /** Exports what is buffered and stops; never throws. */
  close(): Promise<void>;
}

/**
 * Exports the team's spans and metrics over OTLP/HTTP to `OTEL_EXPORTER_OTLP_ENDPOINT` when it is
 * set, as `OTEL_SERVICE_NAME` (default `teamwire-example`).
 */
export function startAppTelemetry(io: {
  env: Readonly<Record<string, string | undefined>>;
  stderr: { write(text: string): unknown };
}): AppTelemetry {
  const endpoint = otlpEndpointFromEnv(io.env);
  if (endpoint === undefined) {
    return { events: (sink) => sink, teamOptions: {}, attach() {}, async close() {} };
  }
  const serviceName = io.env.OTEL_SERVICE_NAME?.trim() || 'teamwire-example';
  const started = startOtlpTelemetry({ endpoint, serviceName });
  const { telemetry } = started;
  io.stderr.write(`exporting traces and metrics to ${endpoint} as ${serviceName}\n`);
  return {
    events: (sink) => telemetry.wrap(sink),
    teamOptions: { traceContext: telemetry.traceContext },
    attach: (team) => telemetry.attach(team),
    async close() {
      await started.shutdown().catch(() => undefined);
    },
  };
}
