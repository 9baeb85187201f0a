import type { EventSink, TeamService, TraceContextSource } from '@teamwire/core';

/** A command's telemetry: off (every method a no-op) unless `OTEL_EXPORTER_OTLP_ENDPOINT` is set. */
export interface CommandTelemetry {
  /** The sink to open the team with: `sink` itself when off. */
  events(sink: EventSink): EventSink;
  /** `openTeam`'s `traceContext` option (empty when off). */
  readonly teamOptions: { traceContext?: TraceContextSource };
  /** Lets the telemetry read the opened team's roster. */
  attach(team: TeamService): void;
  /** Exports what is buffered and stops; never throws. */
  close(): Promise<void>;
}

const OFF: CommandTelemetry = {
  events: (sink) => sink,
  teamOptions: {},
  attach() {},
  async close() {},
};

/**
 * Starts OTLP/HTTP export of the team's spans and metrics when the standard
 * `OTEL_EXPORTER_OTLP_ENDPOINT` is set (`OTEL_SERVICE_NAME` names the service, default
 * `teamwire-<command>`). `@teamwire/otel` is an optional peer: it is loaded only then, and when it is
 * not installed the command runs without telemetry and says so on stderr.
 */
export async function startCommandTelemetry(
  io: {
    env: Readonly<Record<string, string | undefined>>;
    stderr: { write(text: string): unknown };
  },
  command: string,
): Promise<CommandTelemetry> {
  const endpoint = io.env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim();
  if (endpoint === undefined || endpoint === '') return OFF;
  let otel: typeof import('@teamwire/otel');
  try {
    otel = await import('@teamwire/otel');
  } catch {
    io.stderr.write(
      'teamwire: OTEL_EXPORTER_OTLP_ENDPOINT is set but @teamwire/otel is not installed: no telemetry\n',
    );
    return OFF;
  }
  const serviceName = io.env.OTEL_SERVICE_NAME?.trim() || `teamwire-${command}`;
  const started = otel.startOtlpTelemetry({ endpoint, serviceName });
  const { telemetry } = started;
  io.stderr.write(`teamwire: exporting traces and metrics to ${endpoint} as ${serviceName}\n`);
  return {
    events: (sink) => telemetry.wrap(sink),
    teamOptions: { traceContext: telemetry.traceContext },
    attach: (team) => telemetry.attach(team),
    async close() {
      await started.shutdown().catch(() => undefined);
    },
  };
}
