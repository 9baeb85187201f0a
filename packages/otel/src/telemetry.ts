import {
  type Attributes,
  type Context,
  type Counter,
  type Histogram,
  type Link,
  type Meter,
  metrics,
  ROOT_CONTEXT,
  type Span,
  SpanKind,
  SpanStatusCode,
  type Tracer,
  trace,
} from '@opentelemetry/api';
import type {
  AgentEvent,
  AgentRef,
  EventSink,
  MemberInfo,
  MessageTrace,
  TeamRecord,
  TraceContextSource,
} from '@teamwire/core';
import { ATTR, METRIC } from './conventions.js';
import { fromMessageTrace, toMessageTrace } from './trace-context.js';

/** The instrumentation scope name of the tracer and meter this package takes by default. */
export const INSTRUMENTATION_NAME = '@teamwire/otel';

/** Content attributes (tool arguments and results, turn output) are cut to this many characters. */
export const CONTENT_MAX = 4096;

/** At most this many queued messages are remembered for linking and latency (oldest go first). */
export const REMEMBERED_MESSAGES_MAX = 10_000;

/** Options of {@link createTeamTelemetry}. */
export interface TeamTelemetryOptions {
  /** Where spans go; default: the global tracer provider's `@teamwire/otel` tracer. */
  tracer?: Tracer;
  /** Where metrics go; default: the global meter provider's `@teamwire/otel` meter. */
  meter?: Meter;
  /**
   * Puts prompt and message text into attributes: tool call arguments and results, and a turn's
   * last assistant text. Off by default: spans then carry names, ids, counts and timings only.
   */
  captureContent?: boolean;
  /** The team's id for `teamwire.team.id`; by default taken from the records the sink sees. */
  teamId?: string;
  /** Wall-clock time in ms since the epoch; default `performance.timeOrigin + performance.now()`. */
  now?: () => number;
}

/** What {@link TeamTelemetry.attach} reads from an open team: its members. */
export interface TelemetryTeamView {
  /** The lead's credential, to read the roster with. */
  readonly lead: AgentRef;
  /** The roster (`TeamService.listMembers`). */
  listMembers(agent: AgentRef): MemberInfo[];
}

/** The telemetry of one team in one process; see {@link createTeamTelemetry}. */
export interface TeamTelemetry {
  /** An `EventSink` that turns the team's events into spans and metrics; never throws. */
  readonly events: EventSink;
  /** `events` in front of another sink (e.g. the event hub): both get every event. */
  wrap(next: EventSink): EventSink;
  /** Pass to `openTeam({ traceContext })`: queued mail carries its sender's span context. */
  readonly traceContext: TraceContextSource;
  /**
   * Lets the telemetry read the roster of the opened team, for members (and their models) whose
   * records it has not seen, e.g. members spawned before this process opened the team.
   */
  attach(team: TelemetryTeamView): void;
  /** Ends every span still open (turns cut off by a shutdown) and stops the gauges. */
  close(): void;
}

interface Turn {
  span: Span;
  context: Context;
  startedAt: number;
  reason: string;
  messageId: string | undefined;
  error: string | undefined;
}

interface Track {
  name: string;
  turn: Turn | undefined;
  /** The span context of the member's last turn, once it ended (idle notices come after). */
  last: MessageTrace | undefined;
  /** When the member's next model call started: the turn's start or its last tool result. */
  boundary: number;
  /** A model call that finished and waits to learn its finish reason. */
  chat: { span: Span; endAt: number } | undefined;
  tools: Map<string, Span>;
  compaction: Span | undefined;
  /** Attribute sets of this member, built once and reused until what they say changes. */
  attrs: MemberAttributes | undefined;
}

/**
 * A member's attribute sets, frozen so that sharing one between spans and metric points is safe:
 * a tracer or meter copies or keeps them, never changes them. Rebuilt when the team, the member's
 * id, its task in progress or its model changes.
 */
interface MemberAttributes {
  teamId: string | undefined;
  id: string | undefined;
  task: string | undefined;
  model: Model | undefined;
  /** Team, agent name and id, member, task in progress: what every span of the member carries. */
  span: Attributes;
  /** Team, member, `chat` operation, provider and model: the model-call metrics' attributes. */
  chat: Attributes;
  chatInput: Attributes;
  chatOutput: Attributes;
  /** Metric attribute sets of the member by the attribute pair they add (enum values only). */
  metrics: Map<string, Map<string, Map<string, Attributes>>>;
}

interface Remembered {
  trace: MessageTrace | undefined;
  queuedAt: number;
  targetId: string;
  kind: string;
}

interface Model {
  provider: string;
  model: string | undefined;
}

/**
 * The OpenTelemetry layer of a team: spans after the GenAI semantic conventions and team metrics,
 * built from core's agent events and records, so core itself has no OpenTelemetry dependency.
 *
 * ```ts
 * const telemetry = createTeamTelemetry({ tracer, meter });
 * const team = await openTeam({ ...ports, events: telemetry.wrap(hub), traceContext: telemetry.traceContext });
 * telemetry.attach(team);
 * ```
 *
 * Spans: `invoke_agent <member>` per turn; under it `chat <model>` per model call,
 * `execute_tool <tool>` per tool call and `compaction <member>` per compaction. A turn started by
 * mail is a child of, and links to, the span that queued the mail (the message's `trace`), so one
 * trace follows the work across members and processes. Metrics: see {@link METRIC}.
 */
export function createTeamTelemetry(options: TeamTelemetryOptions = {}): TeamTelemetry {
  const tracer = options.tracer ?? trace.getTracer(INSTRUMENTATION_NAME);
  const meter = options.meter ?? metrics.getMeter(INSTRUMENTATION_NAME);
  const capture = options.captureContent === true;
  const origin = performance.timeOrigin;
  const now = options.now ?? (() => origin + performance.now());
  let teamId = options.teamId;
  let team: TelemetryTeamView | undefined;
  let closed = false;

  const tracks = new Map<string, Track>();
  /** Member names by id, and ids by name, from the records seen and the attached roster. */
  const names = new Map<string, string>();
  const ids = new Map<string, string>();
  const models = new Map<string, Model | undefined>();
  /** The task each member (by id) has in progress. */
  const tasks = new Map<string, string>();
  const mail = new Map<string, Remembered>();
  const pending = new Map<string, number>();
  const approvals = new Set<string>();
  /** Members whose turns run in this process (they published more than records here). */
  const local = new Set<string>();

  const tokenUsage: Histogram = meter.createHistogram(METRIC.tokenUsage, {
    description: 'Tokens per model call, by member, model and token type.',
    unit: '{token}',
  });
  const operationDuration: Histogram = meter.createHistogram(METRIC.operationDuration, {
    description: 'Duration of model calls.',
    unit: 's',
  });
  const turnDuration: Histogram = meter.createHistogram(METRIC.turnDuration, {
    description: 'Duration of member turns.',
    unit: 's',
  });
  const deliveryLatency: Histogram = meter.createHistogram(METRIC.deliveryLatency, {
    description: "Time from a message's queuing until its target's transcript holds it.",
    unit: 's',
  });
  const compactions: Counter = meter.createCounter(METRIC.compactions, {
    description: 'Compactions of member contexts.',
    unit: '{compaction}',
  });
  const pendingGauge = meter.createObservableGauge(METRIC.pendingMail, {
    description: 'Undelivered messages per target member.',
    unit: '{message}',
  });
  const approvalsGauge = meter.createObservableGauge(METRIC.approvalsWaiting, {
    description: 'Approvals waiting for a decision.',
    unit: '{approval}',
  });
  const observePending = (result: { observe(value: number, attributes?: Attributes): void }) => {
    for (const [targetId, count] of pending) {
      result.observe(count, { ...teamAttrs(), [ATTR.member]: names.get(targetId) ?? targetId });
    }
  };
  const observeApprovals = (result: { observe(value: number, attributes?: Attributes): void }) => {
    result.observe(approvals.size, teamAttrs());
  };
  pendingGauge.addCallback(observePending);
  approvalsGauge.addCallback(observeApprovals);

  function teamAttrs(): Attributes {
    return teamId === undefined ? {} : { [ATTR.team]: teamId };
  }

  function track(name: string): Track {
    let found = tracks.get(name);
    if (found === undefined) {
      found = {
        name,
        turn: undefined,
        last: undefined,
        boundary: now(),
        chat: undefined,
        tools: new Map(),
        compaction: undefined,
        attrs: undefined,
      };
      tracks.set(name, found);
    }
    return found;
  }

  function learnMember(id: string, name: string, provider: string | undefined): void {
    names.set(id, name);
    ids.set(name, id);
    if (provider !== undefined && provider !== 'external') {
      const colon = provider.indexOf(':');
      models.set(
        name,
        colon < 0
          ? { provider, model: undefined }
          : { provider: provider.slice(0, colon), model: provider.slice(colon + 1) },
      );
    }
  }

  function modelOf(name: string): Model | undefined {
    if (!models.has(name) && team !== undefined) {
      try {
        for (const member of team.listMembers(team.lead)) {
          learnMember(member.id, member.name, member.provider);
        }
      } catch {
        // a roster that cannot be read leaves the model unnamed
      }
      // read once per name: a member record that names a model later still sets it
      if (!models.has(name)) models.set(name, undefined);
    }
    return models.get(name);
  }

  /** The member's attribute sets, rebuilt only when the team, its id, task or model changed. */
  function attributesOf(t: Track): MemberAttributes {
    const id = ids.get(t.name);
    const task = id === undefined ? undefined : tasks.get(id);
    const model = modelOf(t.name);
    const cached = t.attrs;
    if (
      cached !== undefined &&
      cached.teamId === teamId &&
      cached.id === id &&
      cached.task === task &&
      cached.model === model
    ) {
      return cached;
    }
    const span: Attributes = teamAttrs();
    span[ATTR.agentName] = t.name;
    span[ATTR.member] = t.name;
    if (id !== undefined) {
      span[ATTR.agentId] = id;
      if (task !== undefined) span[ATTR.task] = task;
    }
    const chat: Attributes = teamAttrs();
    chat[ATTR.member] = t.name;
    chat[ATTR.operation] = 'chat';
    if (model !== undefined) {
      chat[ATTR.provider] = model.provider;
      if (model.model !== undefined) chat[ATTR.requestModel] = model.model;
    }
    const built: MemberAttributes = {
      teamId,
      id,
      task,
      model,
      span: Object.freeze(span),
      chat: Object.freeze(chat),
      chatInput: Object.freeze({ ...chat, [ATTR.tokenType]: 'input' }),
      chatOutput: Object.freeze({ ...chat, [ATTR.tokenType]: 'output' }),
      metrics: new Map(),
    };
    t.attrs = built;
    return built;
  }

  /**
   * A metric attribute set of the member: team, member and the two attributes given, built once
   * per value pair. The values come from small enums (reasons, kinds), so the sets stay few.
   */
  function metricAttrs(
    t: Track,
    first: string,
    firstValue: string,
    second: string,
    secondValue: string | undefined,
  ): Attributes {
    const { metrics } = attributesOf(t);
    let byFirst = metrics.get(first);
    if (byFirst === undefined) {
      byFirst = new Map();
      metrics.set(first, byFirst);
    }
    let bySecond = byFirst.get(firstValue);
    if (bySecond === undefined) {
      bySecond = new Map();
      byFirst.set(firstValue, bySecond);
    }
    let found = bySecond.get(secondValue ?? '');
    if (found === undefined) {
      const attributes = teamAttrs();
      attributes[ATTR.member] = t.name;
      attributes[first] = firstValue;
      if (secondValue !== undefined) attributes[second] = secondValue;
      found = Object.freeze(attributes);
      bySecond.set(secondValue ?? '', found);
    }
    return found;
  }

  /** A new attribute object: what every span of the member carries, and `extra`. */
  function spanAttrs(t: Track, extra?: Attributes): Attributes {
    const attributes = Object.assign({}, attributesOf(t).span);
    return extra === undefined ? attributes : Object.assign(attributes, extra);
  }

  function clip(text: string): string {
    return text.length <= CONTENT_MAX ? text : text.slice(0, CONTENT_MAX);
  }

  function finishChat(t: Track, reasons: readonly string[] | undefined): void {
    const chat = t.chat;
    if (chat === undefined) return;
    t.chat = undefined;
    if (reasons !== undefined) chat.span.setAttribute(ATTR.finishReasons, [...reasons]);
    chat.span.end(chat.endAt);
  }

  function endTools(t: Track, at: number): void {
    if (t.tools.size === 0) return;
    for (const span of t.tools.values()) {
      span.setStatus({ code: SpanStatusCode.ERROR, message: 'the turn ended before the tool' });
      span.setAttribute(ATTR.errorType, 'interrupted');
      span.end(at);
    }
    t.tools.clear();
  }

  function endCompaction(t: Track, at: number): void {
    if (t.compaction === undefined) return;
    t.compaction.end(at);
    t.compaction = undefined;
  }

  function parentOf(t: Track): Context {
    return t.turn?.context ?? ROOT_CONTEXT;
  }

  function startTurn(
    t: Track,
    event: Extract<AgentEvent, { type: 'turn.start' }>,
    at: number,
  ): void {
    if (t.turn !== undefined) endTurn(t, undefined, at);
    const member = attributesOf(t);
    const attributes = spanAttrs(t);
    attributes[ATTR.operation] = 'invoke_agent';
    attributes[ATTR.turnReason] = event.reason;
    const { model } = member;
    if (model !== undefined) {
      attributes[ATTR.provider] = model.provider;
      if (model.model !== undefined) attributes[ATTR.requestModel] = model.model;
    }
    if (event.taskId !== undefined) attributes[ATTR.task] = event.taskId;
    let parent = ROOT_CONTEXT;
    const links: Link[] = [];
    if (event.messageId !== undefined) {
      attributes[ATTR.messageId] = event.messageId;
      const message = mail.get(event.messageId);
      if (message !== undefined) {
        attributes[ATTR.messageKind] = message.kind;
        const sender = fromMessageTrace(message.trace);
        if (sender !== undefined) {
          parent = trace.setSpanContext(ROOT_CONTEXT, sender);
          links.push({ context: sender, attributes: { [ATTR.messageId]: event.messageId } });
        }
      }
    }
    const span = tracer.startSpan(
      `invoke_agent ${t.name}`,
      { kind: SpanKind.INTERNAL, attributes, links, startTime: at },
      parent,
    );
    t.turn = {
      span,
      context: trace.setSpan(ROOT_CONTEXT, span),
      startedAt: at,
      reason: event.reason,
      messageId: event.messageId,
      error: undefined,
    };
    t.boundary = at;
  }

  function endTurn(
    t: Track,
    event: Extract<AgentEvent, { type: 'turn.end' }> | undefined,
    at: number,
  ): void {
    const turn = t.turn;
    finishChat(t, event === undefined ? undefined : finishReasonsOf(event.stopReason));
    endTools(t, at);
    endCompaction(t, at);
    if (turn === undefined) return;
    t.turn = undefined;
    const { span } = turn;
    const stopReason = event?.stopReason ?? 'interrupted';
    span.setAttribute(ATTR.stopReason, stopReason);
    if (event !== undefined) span.setAttribute(ATTR.turnSteps, event.steps);
    if (capture && event !== undefined && event.text !== '') {
      span.setAttribute(
        ATTR.outputMessages,
        JSON.stringify([
          { role: 'assistant', parts: [{ type: 'text', content: clip(event.text) }] },
        ]),
      );
    }
    if (turn.error !== undefined || stopReason === 'error') {
      span.setAttribute(ATTR.errorType, turn.error ?? 'error');
      span.setStatus({ code: SpanStatusCode.ERROR, message: turn.error ?? 'the turn failed' });
    }
    t.last = toMessageTrace(span.spanContext());
    span.end(at);
    turnDuration.record(
      Math.max(0, at - turn.startedAt) / 1000,
      metricAttrs(t, ATTR.turnReason, turn.reason, ATTR.stopReason, stopReason),
    );
  }

  function onModelStep(t: Track, event: Extract<AgentEvent, { type: 'model.step' }>, at: number) {
    finishChat(t, undefined);
    const member = attributesOf(t);
    const { model } = member;
    const attributes = spanAttrs(t);
    attributes[ATTR.operation] = 'chat';
    if (model !== undefined) {
      attributes[ATTR.provider] = model.provider;
      if (model.model !== undefined) attributes[ATTR.requestModel] = model.model;
    }
    const { usage } = event;
    attributes[ATTR.inputTokens] = usage.inputTokens;
    attributes[ATTR.outputTokens] = usage.outputTokens;
    if (usage.cacheReadTokens !== undefined)
      attributes[ATTR.cacheReadTokens] = usage.cacheReadTokens;
    if (usage.cacheWriteTokens !== undefined) {
      attributes[ATTR.cacheWriteTokens] = usage.cacheWriteTokens;
    }
    const startedAt = Math.min(t.boundary, at);
    const span = tracer.startSpan(
      model?.model === undefined ? 'chat' : `chat ${model.model}`,
      { kind: SpanKind.CLIENT, attributes, startTime: startedAt },
      parentOf(t),
    );
    t.chat = { span, endAt: at };
    t.boundary = at;
    tokenUsage.record(usage.inputTokens, member.chatInput);
    tokenUsage.record(usage.outputTokens, member.chatOutput);
    operationDuration.record((at - startedAt) / 1000, member.chat);
  }

  function onRecord(record: TeamRecord): void {
    teamId ??= record.teamId;
    switch (record.type) {
      case 'member':
        learnMember(record.member.id, record.member.name, record.member.provider);
        break;
      case 'task': {
        const { task } = record;
        if (task.status === 'in_progress' && task.ownerId !== undefined) {
          tasks.set(task.ownerId, task.id);
        } else {
          for (const [member, id] of tasks) if (id === task.id) tasks.delete(member);
        }
        break;
      }
      case 'message.queued': {
        const { message } = record;
        names.set(message.senderId, message.senderName);
        ids.set(message.senderName, message.senderId);
        if (mail.has(message.id)) break;
        mail.set(message.id, {
          trace: message.trace,
          queuedAt: record.at,
          targetId: message.targetId,
          kind: message.kind,
        });
        pending.set(message.targetId, (pending.get(message.targetId) ?? 0) + 1);
        if (mail.size > REMEMBERED_MESSAGES_MAX) {
          const oldest = mail.keys().next().value as string;
          forget(oldest);
        }
        break;
      }
      case 'message.delivered': {
        const message = mail.get(record.messageId);
        if (message === undefined) break;
        forget(record.messageId);
        const target = names.get(record.targetId);
        if (target === undefined || !local.has(target)) break;
        deliveryLatency.record(
          Math.max(0, record.at - message.queuedAt) / 1000,
          metricAttrs(track(target), ATTR.messageKind, message.kind, '', undefined),
        );
        // mail spliced into a running turn: the turn links to the span that sent it
        const turn = tracks.get(target)?.turn;
        const sender = fromMessageTrace(message.trace);
        if (turn !== undefined && sender !== undefined && turn.messageId !== record.messageId) {
          turn.span.addLink({
            context: sender,
            attributes: { [ATTR.messageId]: record.messageId },
          });
        }
        break;
      }
      case 'message.dead_lettered':
        forget(record.messageId);
        break;
      case 'approval.requested':
        approvals.add(record.approval.id);
        break;
      case 'approval.decided':
        approvals.delete(record.approvalId);
        break;
      default:
        break;
    }
  }

  function forget(messageId: string): void {
    const message = mail.get(messageId);
    if (message === undefined) return;
    mail.delete(messageId);
    const count = (pending.get(message.targetId) ?? 1) - 1;
    if (count > 0) pending.set(message.targetId, count);
    else pending.delete(message.targetId);
  }

  function handle(name: string, event: AgentEvent): void {
    if (closed) return;
    if (event.type === 'record') {
      onRecord(event.record);
      return;
    }
    if (
      event.type === 'model.text-delta' ||
      event.type === 'model.reasoning-delta' ||
      event.type === 'custom' ||
      event.type === 'workspace'
    ) {
      return;
    }
    local.add(name);
    const t = track(name);
    const at = now();
    switch (event.type) {
      case 'turn.start':
        startTurn(t, event, at);
        break;
      case 'model.step':
        onModelStep(t, event, at);
        break;
      case 'tool.call': {
        finishChat(t, ['tool_calls']);
        const attributes = spanAttrs(t);
        attributes[ATTR.operation] = 'execute_tool';
        attributes[ATTR.toolName] = event.toolCall.name;
        attributes[ATTR.toolCallId] = event.toolCall.id;
        attributes[ATTR.toolType] = 'function';
        if (capture) {
          attributes[ATTR.toolArguments] = clip(JSON.stringify(event.toolCall.input) ?? 'null');
        }
        t.tools.get(event.toolCall.id)?.end(at);
        t.tools.set(
          event.toolCall.id,
          tracer.startSpan(
            `execute_tool ${event.toolCall.name}`,
            { kind: SpanKind.INTERNAL, attributes, startTime: at },
            parentOf(t),
          ),
        );
        break;
      }
      case 'tool.result': {
        const span = t.tools.get(event.toolCallId);
        t.boundary = at;
        if (span === undefined) break;
        t.tools.delete(event.toolCallId);
        if (event.isError) {
          span.setAttribute(ATTR.errorType, 'tool_error');
          span.setStatus({ code: SpanStatusCode.ERROR });
        }
        if (capture) span.setAttribute(ATTR.toolResult, clip(event.text));
        span.end(at);
        break;
      }
      case 'context.compacting':
        endCompaction(t, at);
        t.compaction = tracer.startSpan(
          `compaction ${t.name}`,
          {
            kind: SpanKind.INTERNAL,
            attributes: spanAttrs(t, {
              [ATTR.compactionReason]: event.reason,
              [ATTR.tokensBefore]: event.tokensBefore,
              [ATTR.estimated]: event.estimated,
            }),
            startTime: at,
          },
          parentOf(t),
        );
        break;
      case 'context.compacted': {
        const span =
          t.compaction ??
          tracer.startSpan(
            `compaction ${t.name}`,
            { kind: SpanKind.INTERNAL, startTime: at - event.durationMs },
            parentOf(t),
          );
        t.compaction = undefined;
        span.setAttributes(
          spanAttrs(t, {
            [ATTR.compactionReason]: event.reason,
            [ATTR.tokensBefore]: event.tokensBefore,
            [ATTR.tokensAfter]: event.tokensAfter,
            [ATTR.estimated]: event.estimated,
            [ATTR.replacedMessages]: event.replacedMessages,
            [ATTR.compactionPolicy]: event.policy,
          }),
        );
        span.end(at);
        compactions.add(1, metricAttrs(t, ATTR.compactionReason, event.reason, '', undefined));
        t.boundary = at;
        break;
      }
      case 'turn.end':
        endTurn(t, event, at);
        break;
      case 'error':
        if (t.turn !== undefined) t.turn.error = event.code;
        break;
      case 'status':
        if (
          event.status === 'retired' ||
          event.status === 'failed' ||
          event.status === 'inactive'
        ) {
          endTurn(t, undefined, at);
        }
        break;
      default:
        break;
    }
  }

  const events: EventSink = {
    publish(name, event) {
      try {
        handle(name, event);
      } catch {
        // telemetry never breaks a turn
      }
    },
  };

  return {
    events,
    wrap(next) {
      return {
        publish(name, event) {
          events.publish(name, event);
          next.publish(name, event);
        },
      };
    },
    traceContext: {
      current(memberName) {
        const t = tracks.get(memberName);
        if (t === undefined) return undefined;
        if (t.turn === undefined) return t.last;
        let span = t.turn.span;
        for (const tool of t.tools.values()) span = tool;
        return toMessageTrace(span.spanContext());
      },
    },
    attach(view) {
      team = view;
    },
    close() {
      if (closed) return;
      const at = now();
      for (const t of tracks.values()) endTurn(t, undefined, at);
      closed = true;
      pendingGauge.removeCallback(observePending);
      approvalsGauge.removeCallback(observeApprovals);
    },
  };
}

/** A model call's finish reasons, as the turn's end tells them (a call with tools was told earlier). */
function finishReasonsOf(
  stopReason: Extract<AgentEvent, { type: 'turn.end' }>['stopReason'],
): readonly string[] | undefined {
  if (stopReason === 'end_turn') return ['stop'];
  if (stopReason === 'awaiting_approval') return ['tool_calls'];
  return undefined;
}
