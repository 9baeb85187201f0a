import type { AgentEvent, EventHub, TeamRecord } from '@teamwire/core';
import { type CompactionStat, plainLine } from './board.js';

/*
 * What a worker process prints: one line per turn of a member it runs, when the turn ends. The
 * process that started the worker reads them back (prefixed `[worker n]`) for its summary.
 */

/** One finished turn. */
export interface TurnLine {
  at: number;
  member: string;
  /** What started it: `task-3`, `mail from lead`, `mail`, `a host prompt`. */
  cause: string;
  steps: number;
  toolCalls: number;
  inputTokens: number;
  outputTokens: number;
  stopReason: string;
}

export function formatTurnLine(turn: TurnLine): string {
  return plainLine(
    turn.at,
    `${turn.member} turn on ${turn.cause}: ${turn.steps} model call(s), ${turn.toolCalls} tool call(s), ${turn.inputTokens}/${turn.outputTokens} tokens, ${turn.stopReason}`,
  );
}

const TURN_LINE =
  /^\d\d:\d\d:\d\d\.\d{3} (\S+) turn on (.+): (\d+) model call\(s\), (\d+) tool call\(s\), (\d+)\/(\d+) tokens, (\w+)$/;

/** Reads a line of {@link formatTurnLine} back (without its time); `undefined` for any other line. */
export function parseTurnLine(line: string): Omit<TurnLine, 'at'> | undefined {
  const m = TURN_LINE.exec(line);
  if (!m) return undefined;
  return {
    member: m[1] as string,
    cause: m[2] as string,
    steps: Number(m[3]),
    toolCalls: Number(m[4]),
    inputTokens: Number(m[5]),
    outputTokens: Number(m[6]),
    stopReason: m[7] as string,
  };
}

/**
 * The line a worker prints when a member's context was compacted, with the exact counts (the
 * process that started the worker reads it back for its board and summary).
 */
export function formatCompactionLine(at: number, stat: CompactionStat): string {
  return plainLine(
    at,
    `${stat.member} compacted its context (${stat.reason}, ${stat.policy}): ${stat.tokensBefore} -> ${stat.tokensAfter} tokens${stat.estimated ? ' (estimated)' : ''}, ${stat.replacedMessages} message(s) replaced, ${stat.durationMs} ms`,
  );
}

const COMPACTION_LINE =
  /^\d\d:\d\d:\d\d\.\d{3} (\S+) compacted its context \((budget|overflow), ([^)]+)\): (\d+) -> (\d+) tokens( \(estimated\))?, (\d+) message\(s\) replaced, (\d+(?:\.\d+)?) ms$/;

/** Reads a line of {@link formatCompactionLine} back; `undefined` for any other line. */
export function parseCompactionLine(line: string): CompactionStat | undefined {
  const m = COMPACTION_LINE.exec(line);
  if (!m) return undefined;
  return {
    member: m[1] as string,
    reason: m[2] as CompactionStat['reason'],
    policy: m[3] as string,
    tokensBefore: Number(m[4]),
    tokensAfter: Number(m[5]),
    estimated: m[6] !== undefined,
    replacedMessages: Number(m[7]),
    durationMs: Number(m[8]),
  };
}

/**
 * Prints a line per turn of the members running in this process (turn events are published only
 * where a member runs) and a line per runtime error (`error`), and hands every durable record to
 * `onRecord`. Returns a function that stops watching once the hub is closed.
 */
export function printTurns(
  hub: EventHub,
  options: {
    write(line: string): void;
    writeError(line: string): void;
    onRecord?(record: TeamRecord): void;
  },
): () => Promise<void> {
  const { write } = options;
  const open = new Map<
    string,
    { cause: string; toolCalls: number; inputTokens: number; outputTokens: number }
  >();
  const senders = new Map<string, string>();
  const subscription = hub.subscribe({});
  const apply = (agent: string, event: AgentEvent, at: number) => {
    switch (event.type) {
      case 'record':
        if (event.record.type === 'message.queued') {
          senders.set(event.record.message.id, event.record.message.senderName);
        }
        options.onRecord?.(event.record);
        return;
      case 'error':
        options.writeError(plainLine(at, `${agent} error ${event.code}: ${event.message}`));
        return;
      case 'turn.start': {
        const from = event.messageId === undefined ? undefined : senders.get(event.messageId);
        const cause =
          event.reason === 'task-claim'
            ? (event.taskId ?? 'a task')
            : event.reason === 'message'
              ? from === undefined
                ? 'mail'
                : `mail from ${from}`
              : 'a host prompt';
        open.set(agent, { cause, toolCalls: 0, inputTokens: 0, outputTokens: 0 });
        return;
      }
      case 'tool.call': {
        const turn = open.get(agent);
        if (turn) turn.toolCalls++;
        return;
      }
      case 'model.step': {
        const turn = open.get(agent);
        if (turn) {
          turn.inputTokens += event.usage.inputTokens;
          turn.outputTokens += event.usage.outputTokens;
        }
        return;
      }
      case 'context.compacted':
        write(
          formatCompactionLine(at, {
            member: agent,
            reason: event.reason,
            policy: event.policy,
            tokensBefore: event.tokensBefore,
            tokensAfter: event.tokensAfter,
            estimated: event.estimated,
            replacedMessages: event.replacedMessages,
            durationMs: event.durationMs,
          }),
        );
        return;
      case 'turn.end': {
        const turn = open.get(agent) ?? {
          cause: 'an earlier start',
          toolCalls: 0,
          inputTokens: 0,
          outputTokens: 0,
        };
        open.delete(agent);
        write(
          formatTurnLine({
            at,
            member: agent,
            ...turn,
            steps: event.steps,
            stopReason: event.stopReason,
          }),
        );
        return;
      }
      default:
        return;
    }
  };
  const consumer = (async () => {
    for await (const item of subscription) {
      if (item.type === 'event') apply(item.agent, item.event, item.at);
    }
  })();
  return async () => {
    subscription.close();
    await consumer;
  };
}
