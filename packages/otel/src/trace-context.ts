import {
  createTraceState,
  isSpanContextValid,
  type SpanContext,
  TraceFlags,
} from '@opentelemetry/api';
import { type MessageTrace, TRACEPARENT_PATTERN, TRACESTATE_MAX } from '@teamwire/core';

/** A span's context as the W3C trace context a message carries; `undefined` if not valid. */
export function toMessageTrace(context: SpanContext): MessageTrace | undefined {
  if (!isSpanContextValid(context)) return undefined;
  const flags = (context.traceFlags & 0xff).toString(16).padStart(2, '0');
  const traceparent = `00-${context.traceId}-${context.spanId}-${flags}`;
  const state = context.traceState?.serialize();
  return state !== undefined && state !== '' && state.length <= TRACESTATE_MAX
    ? { traceparent, tracestate: state }
    : { traceparent };
}

/** The remote span context a message's trace names; `undefined` when it is not valid W3C. */
export function fromMessageTrace(trace: MessageTrace | undefined): SpanContext | undefined {
  if (trace === undefined || !TRACEPARENT_PATTERN.test(trace.traceparent)) return undefined;
  const [, traceId, spanId, flags] = trace.traceparent.split('-') as [
    string,
    string,
    string,
    string,
  ];
  const context: SpanContext = {
    traceId,
    spanId,
    traceFlags: Number.parseInt(flags, 16) & TraceFlags.SAMPLED,
    isRemote: true,
  };
  if (trace.tracestate !== undefined && trace.tracestate.length <= TRACESTATE_MAX) {
    context.traceState = createTraceState(trace.tracestate);
  }
  return context;
}
