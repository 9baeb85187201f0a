/**
 * The attribute, span and metric names this package writes. The `gen_ai.*` names follow the
 * OpenTelemetry GenAI semantic conventions (development status); `teamwire.*` names are this
 * package's own, for what those conventions have no name for (teams, mail, compaction).
 */
export const ATTR = {
  /** `invoke_agent`, `chat` or `execute_tool`. */
  operation: 'gen_ai.operation.name',
  /** The model provider, e.g. `openai`, `anthropic`, `scripted`. */
  provider: 'gen_ai.provider.name',
  /** The member's name. */
  agentName: 'gen_ai.agent.name',
  /** The member's id. */
  agentId: 'gen_ai.agent.id',
  /** The model the call asked for. */
  requestModel: 'gen_ai.request.model',
  /** Why the model call ended (`stop`, `tool_calls`). */
  finishReasons: 'gen_ai.response.finish_reasons',
  /** Prompt tokens of a model call. */
  inputTokens: 'gen_ai.usage.input_tokens',
  /** Generated tokens of a model call. */
  outputTokens: 'gen_ai.usage.output_tokens',
  /** Prompt tokens served from the provider's cache. */
  cacheReadTokens: 'gen_ai.usage.cache_read.input_tokens',
  /** Prompt tokens written into the provider's cache. */
  cacheWriteTokens: 'gen_ai.usage.cache_creation.input_tokens',
  /** `input` or `output`, on the token usage metric. */
  tokenType: 'gen_ai.token.type',
  /** The tool called. */
  toolName: 'gen_ai.tool.name',
  /** The tool call's id. */
  toolCallId: 'gen_ai.tool.call.id',
  /** Always `function`. */
  toolType: 'gen_ai.tool.type',
  /** A tool call's arguments as JSON (only with `captureContent`). */
  toolArguments: 'gen_ai.tool.call.arguments',
  /** A tool call's result (only with `captureContent`). */
  toolResult: 'gen_ai.tool.call.result',
  /** A turn's last assistant text, as GenAI output messages JSON (only with `captureContent`). */
  outputMessages: 'gen_ai.output.messages',
  /** The failure's code (`TeamError` code, or `tool_error`). */
  errorType: 'error.type',
  /** The team's id. */
  team: 'teamwire.team.id',
  /** The member's name (also on metrics). */
  member: 'teamwire.member.name',
  /** The task the member works on in the turn, when known. */
  task: 'teamwire.task.id',
  /** What started a turn: `message`, `task-claim`, `host`, `approval`. */
  turnReason: 'teamwire.turn.reason',
  /** How a turn ended: core's `turn.end` stop reason. */
  stopReason: 'teamwire.turn.stop_reason',
  /** Model calls a turn made. */
  turnSteps: 'teamwire.turn.steps',
  /** The message that started a turn, or that a link points from. */
  messageId: 'teamwire.message.id',
  /** The message's kind. */
  messageKind: 'teamwire.message.kind',
  /** A compaction's trigger: `budget` or `overflow`. */
  compactionReason: 'teamwire.compaction.reason',
  /** Prompt tokens before the compaction. */
  tokensBefore: 'teamwire.compaction.tokens_before',
  /** Prompt tokens after it. */
  tokensAfter: 'teamwire.compaction.tokens_after',
  /** Messages the summary replaced. */
  replacedMessages: 'teamwire.compaction.replaced_messages',
  /** The compaction policy's name. */
  compactionPolicy: 'teamwire.compaction.policy',
  /** True when the counts were estimated from bytes. */
  estimated: 'teamwire.compaction.estimated',
} as const;

/** The metric names this package records. */
export const METRIC = {
  /** Histogram of tokens per model call ({token}), by member, model and `gen_ai.token.type`. */
  tokenUsage: 'gen_ai.client.token.usage',
  /** Histogram of model call durations (s), by member and model. */
  operationDuration: 'gen_ai.client.operation.duration',
  /** Histogram of turn durations (s), by member, reason and stop reason. */
  turnDuration: 'teamwire.turn.duration',
  /** Histogram of delivery latency (s): queued until in the target's transcript, by target. */
  deliveryLatency: 'teamwire.message.delivery.latency',
  /** Gauge of undelivered messages per target member. */
  pendingMail: 'teamwire.mail.pending',
  /** Counter of compactions, by member and reason. */
  compactions: 'teamwire.compactions',
  /** Gauge of approvals waiting for a decision. */
  approvalsWaiting: 'teamwire.approvals.waiting',
} as const;
