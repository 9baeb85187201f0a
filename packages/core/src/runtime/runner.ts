import type { ChatMessage, MessageSource } from '../chat.js';
import type { Clock, IdSource } from '../clock.js';
import type { ContentBlock } from '../content.js';
import { contentText, textContent } from '../content.js';
import { TeamError } from '../errors.js';
import type { EventSink, MemberStatus } from '../ports/events.js';
import type { SystemBlock } from '../ports/model.js';
import type { ProtocolHooks } from '../ports/protocol.js';
import type { TranscriptStore } from '../ports/transcript-store.js';
import type { Member, QueuedMessage, TeamRecord } from '../records.js';
import type { TeamState } from '../state/index.js';
import type { TurnOutcome } from './agent-loop.js';
import { runTurn, type ToolSet } from './agent-loop.js';
import type { AgentDefinition, AgentRef } from './agents.js';
import { Conversation } from './conversation.js';
import { type CutTextHome, idleNoticeContent } from './idle-notice.js';
import type { TeamService } from './team-service.js';

/** What a runner needs from the service that owns it. */
export interface RunnerHost {
  readonly teamId: string;
  readonly state: TeamState;
  readonly protocol: ProtocolHooks;
  readonly events: EventSink;
  readonly clock: Clock;
  readonly ids: IdSource;
  readonly transcripts: TranscriptStore;
  readonly service: TeamService;
  /** Retry interval of idle-claim while parked; undefined when idle-claim is off. */
  readonly idleClaimIntervalMs: number | undefined;
  readonly maxSteps: number;
  /** Throws `DISPOSED` / `STORE_CLOSED` once the service can no longer write. */
  guard(): void;
  /** True once the service is disposed or broken: a runner then stops without writing. */
  readonly closed: boolean;
  /** Appends records the state already applied, then publishes them under `actorName`. */
  commit(actorName: string, records: readonly TeamRecord[]): Promise<void>;
  /** Pending mail of `memberId` whose `message.queued` record is already durable, in queue order. */
  deliverable(memberId: string): readonly QueuedMessage[];
  /** Routes a queued message to its target (notify a live runner or wake a stopped one). */
  dispatch(message: QueuedMessage): 'accepted' | 'queued';
  refFor(memberId: string): AgentRef;
  toolsFor(member: Member, definition: AgentDefinition): ToolSet;
  /** Called whenever a runner's activity changes, so `idle()` can settle. */
  runnerChanged(): void;
}

/** What a runner is doing. `stopped`: its loop ended (disposed, retired or failed). */
export type RunnerActivity = 'starting' | 'running' | 'idle' | 'stopped';

type Work =
  | { type: 'shutdown'; message: QueuedMessage }
  | { type: 'host'; prompt: HostPrompt }
  | { type: 'resume'; taskId: string }
  | { type: 'message'; message: QueuedMessage }
  | { type: 'claim'; taskId: string };

interface HostPrompt {
  content: ContentBlock[];
  resolve(outcome: TurnOutcome): void;
  reject(error: unknown): void;
}

/**
 * Drives one member: the teammate runner loop, or (for the lead) the lead inbox pump. Both are
 * `loop { pick work at the turn boundary -> run a turn -> ... -> park until mail }`; they differ
 * in what counts as work. A teammate handles a pending shutdown request before anything else and
 * ends without calling the model; after each turn it sends the lead an idle notification
 * (coalesced: at most one undelivered per teammate); when nothing wakes it and idle-claim is on,
 * it claims the lowest ready task. The lead takes host prompts and wakeup mail, never claims and
 * sends no idle notices. Quiet mail never starts a turn: it waits for the next step or turn.
 */
export class AgentRunner {
  readonly isLead: boolean;
  readonly ref: AgentRef;
  activity: RunnerActivity = 'starting';
  /** The runtime failure that stopped this runner, if any. */
  failure: TeamError | undefined;
  private conversation: Conversation | undefined;
  private preparing: Promise<void> | undefined;
  private loopDone: Promise<void> | undefined;
  private wake: (() => void) | undefined;
  private woken = false;
  private claimFailed = false;
  private stopping = false;
  private turnAbort: AbortController | undefined;
  private readonly hostPrompts: HostPrompt[] = [];
  private readonly resumeTasks: string[];
  private readonly system: SystemBlock[];
  private readonly tools: ToolSet;

  constructor(
    private readonly host: RunnerHost,
    readonly member: Member,
    private readonly definition: AgentDefinition,
    options: { isLead: boolean; resumeTasks?: readonly string[]; teammates?: readonly string[] },
  ) {
    this.isLead = options.isLead;
    this.resumeTasks = [...(options.resumeTasks ?? [])];
    this.ref = host.refFor(member.id);
    this.tools = host.toolsFor(member, definition);
    this.system = [{ text: definition.systemPrompt, cacheable: true }];
    if (!this.isLead) {
      this.system.push({
        text: host.protocol.formatInitialPrompt({
          agentName: member.name,
          leadName: host.state.member(host.state.leadId ?? '')?.name ?? 'lead',
          description: member.description,
          teammates: options.teammates ?? [],
        }),
      });
    }
  }

  get name(): string {
    return this.member.name;
  }

  /** True while the loop may still act (not stopped). */
  get live(): boolean {
    return this.activity !== 'stopped';
  }

  /** Busy: running a turn, starting, or woken and about to decide. `idle()` waits for none. */
  get busy(): boolean {
    return this.activity === 'starting' || this.activity === 'running' || this.woken;
  }

  /** The derived status of an active member with this runner. */
  get status(): MemberStatus {
    if (this.failure !== undefined) return 'failed';
    if (this.activity === 'stopped') return 'inactive';
    return this.busy ? 'running' : 'idle';
  }

  /** The loaded conversation (after {@link prepare}). */
  get messages(): readonly ChatMessage[] {
    return this.conversation?.messages ?? [];
  }

  /**
   * Loads the member's transcript (once). `seed` is written first when the transcript is empty:
   * a forked teammate's copy of the lead's conversation.
   */
  prepare(seed?: readonly ChatMessage[]): Promise<void> {
    this.preparing ??= (async () => {
      const entries = await this.host.transcripts.load({ memberId: this.member.id });
      const conversation = new Conversation(
        this.member.id,
        this.host.transcripts,
        this.host.clock,
        () => this.host.guard(),
        entries,
      );
      if (entries.length === 0 && seed !== undefined) await conversation.append(seed);
      this.conversation = conversation;
    })();
    return this.preparing;
  }

  /** Starts the loop (after preparing); resolves when the loop ends. Idempotent. */
  start(): Promise<void> {
    this.loopDone ??= (async () => {
      try {
        await this.prepare();
        await this.loop();
      } catch (error) {
        await this.fail(error);
      } finally {
        this.stopping = true;
        this.turnAbort = undefined;
        for (const prompt of this.hostPrompts.splice(0)) {
          prompt.reject(this.failure ?? new TeamError('DISPOSED', 'the team service was disposed'));
        }
        this.setActivity('stopped');
      }
    })();
    return this.loopDone;
  }

  /** Wakes a parked loop to look at its mail and the board again. */
  notify(): void {
    if (this.wake === undefined) return;
    this.woken = true;
    const wake = this.wake;
    this.wake = undefined;
    wake();
  }

  /** Aborts the running turn, if any. The inbox is kept. */
  interrupt(): boolean {
    if (this.turnAbort === undefined || this.turnAbort.signal.aborted) return false;
    this.turnAbort.abort(new TeamError('ABORTED', `${this.name} was interrupted`));
    return true;
  }

  /** Stops the loop: the running turn is aborted and nothing more is written. */
  stop(): Promise<void> {
    this.stopping = true;
    this.turnAbort?.abort(new TeamError('DISPOSED', 'the team service was disposed'));
    this.notify();
    return this.loopDone ?? Promise.resolve();
  }

  /** Queues a host prompt for the lead; resolves with the outcome of the turn it starts. */
  prompt(content: ContentBlock[]): Promise<TurnOutcome> {
    if (!this.live || this.stopping) {
      return Promise.reject(
        this.failure ?? new TeamError('DISPOSED', 'the team service was disposed'),
      );
    }
    return new Promise<TurnOutcome>((resolve, reject) => {
      this.hostPrompts.push({ content, resolve, reject });
      this.notify();
    });
  }

  // ------------------------------------------------------------------ loop

  private async loop(): Promise<void> {
    while (!this.stopping) {
      const work = this.nextWork();
      if (work === undefined) {
        await this.park();
        continue;
      }
      if (work.type === 'shutdown') {
        await this.retire(work.message);
        return;
      }
      await this.turn(work);
    }
  }

  /** The turn-boundary decision; synchronous, so no mail can slip between look and park. */
  private nextWork(): Work | undefined {
    const { state, protocol } = this.host;
    const pending = this.host.deliverable(this.member.id);
    if (!this.isLead) {
      const shutdown = pending.find((m) => m.kind === 'shutdown_request');
      if (shutdown !== undefined) return { type: 'shutdown', message: shutdown };
    }
    const prompt = this.hostPrompts.shift();
    if (prompt !== undefined) return { type: 'host', prompt };
    while (this.resumeTasks.length > 0) {
      const taskId = this.resumeTasks.shift() as string;
      const task = state.task(taskId);
      if (task?.status === 'in_progress' && task.ownerId === this.member.id) {
        return { type: 'resume', taskId };
      }
    }
    if (pending.some((m) => m.delivery === 'wakeup')) {
      const picked =
        protocol.pickNext({ pending, leadId: state.leadId ?? '' }) ??
        pending.find((m) => m.delivery === 'wakeup');
      if (picked !== undefined) return { type: 'message', message: picked };
    }
    if (!this.isLead && this.host.idleClaimIntervalMs !== undefined && !this.claimFailed) {
      const ready = state.listTasks({ ready: true })[0];
      if (ready !== undefined) return { type: 'claim', taskId: ready.id };
    }
    return undefined;
  }

  private async park(): Promise<void> {
    this.woken = false;
    this.claimFailed = false;
    this.setActivity('idle');
    let cancelTimer: (() => void) | undefined;
    await new Promise<void>((resolve) => {
      this.wake = resolve;
      const interval = this.host.idleClaimIntervalMs;
      if (!this.isLead && interval !== undefined) {
        cancelTimer = this.host.clock.setTimer(interval, () => this.notify());
      }
    });
    cancelTimer?.();
  }

  private async turn(work: Exclude<Work, { type: 'shutdown' }>): Promise<void> {
    const { events, state } = this.host;
    const conversation = this.conversation as Conversation;
    if (work.type === 'claim') {
      this.host.guard();
      let record: TeamRecord;
      try {
        record = state.updateTask(this.member.id, {
          taskId: work.taskId,
          action: { type: 'claim' },
        });
      } catch (error) {
        // The task changed under us: park, and look again when the board changes or the retry
        // interval passes (never spin on a claim that keeps failing).
        if (TeamError.isInstance(error)) {
          this.claimFailed = true;
          return;
        }
        throw error;
      }
      await this.host.commit(this.name, [record]);
    }
    this.setActivity('running');
    const abort = new AbortController();
    this.turnAbort = abort;
    try {
      switch (work.type) {
        case 'message':
          events.publish(this.name, {
            type: 'turn.start',
            reason: 'message',
            messageId: work.message.id,
          });
          await this.deliver([work.message]);
          break;
        case 'claim':
        case 'resume': {
          events.publish(this.name, {
            type: 'turn.start',
            reason: 'task-claim',
            taskId: work.taskId,
          });
          const task = state.getTask(work.taskId);
          const openTasks = state.listTasks({ status: ['pending', 'in_progress'] });
          const source: MessageSource = { kind: 'task-claim', taskId: work.taskId };
          await conversation.append([
            {
              role: 'user',
              content: textContent(this.host.protocol.formatTaskClaimPrompt({ task, openTasks })),
              source,
            },
          ]);
          break;
        }
        case 'host':
          events.publish(this.name, { type: 'turn.start', reason: 'host' });
          await conversation.append([
            { role: 'user', content: work.prompt.content, source: { kind: 'host' } },
          ]);
          break;
      }
      const outcome = await runTurn({
        agentName: this.name,
        model: this.definition.model,
        system: this.system,
        tools: this.tools,
        conversation,
        toolContext: { agent: this.ref, team: this.host.service },
        signal: abort.signal,
        maxSteps: this.definition.maxSteps ?? this.host.maxSteps,
        events,
        promptCacheKey: `${this.host.teamId}:${this.member.id}`,
        beforeStep: () => this.stepBoundary(),
      });
      events.publish(this.name, {
        type: 'turn.end',
        stopReason: outcome.stopReason === 'stopped' ? 'interrupted' : outcome.stopReason,
        steps: outcome.steps,
        text: outcome.text,
      });
      if (work.type === 'host') work.prompt.resolve(outcome);
      if (!this.isLead) await this.notifyIdle(outcome.text, 'transcript');
    } catch (error) {
      if (work.type === 'host') work.prompt.reject(error);
      if (this.host.closed || this.stopping) throw error;
      const failure = toTeamError(error);
      events.publish(this.name, { type: 'error', code: failure.code, message: failure.message });
      events.publish(this.name, { type: 'turn.end', stopReason: 'error', steps: 0, text: '' });
      // The lead cannot fail: the host sees the error and may prompt it again.
      if (!this.isLead) throw failure;
    } finally {
      this.turnAbort = undefined;
    }
  }

  /**
   * The step boundary inside a turn: a pending shutdown ends the turn here; otherwise all pending
   * mail, quiet or not, is recorded now, highest priority first.
   */
  private async stepBoundary(): Promise<'continue' | 'stop'> {
    if (this.stopping) return 'stop';
    const { state, protocol } = this.host;
    let pending = [...this.host.deliverable(this.member.id)];
    if (pending.length === 0) return 'continue';
    if (!this.isLead && pending.some((m) => m.kind === 'shutdown_request')) return 'stop';
    const ordered: QueuedMessage[] = [];
    const leadId = state.leadId ?? '';
    while (pending.length > 0) {
      const next = protocol.pickNext({ pending, leadId }) ?? (pending[0] as QueuedMessage);
      ordered.push(next);
      pending = pending.filter((m) => m !== next);
    }
    await this.deliver(ordered);
    return 'continue';
  }

  /**
   * Records messages in the transcript (skipping any it already holds, e.g. after a crash between
   * the transcript write and the log's `message.delivered`), then appends `message.delivered`.
   */
  private async deliver(messages: readonly QueuedMessage[]): Promise<void> {
    const conversation = this.conversation as Conversation;
    const fresh: ChatMessage[] = [];
    for (const message of messages) {
      if (conversation.holds(message.id)) continue;
      for (const entry of this.render(message)) fresh.push(entry);
    }
    await conversation.append(fresh);
    this.host.guard();
    const records: TeamRecord[] = [];
    for (const message of messages) {
      if (this.host.state.isPending(message.id)) {
        records.push(this.host.state.markDelivered({ messageId: message.id }));
      }
    }
    if (records.length > 0) await this.host.commit(this.name, records);
  }

  private render(message: QueuedMessage): ChatMessage[] {
    let entries: readonly ChatMessage[];
    if (message.kind === 'idle_notification') {
      // Queued notices were cut to fit already; this re-check only bites on one queued under
      // another protocol (a reopened team), so the lead never reads a notice over the limit.
      const content = idleNoticeContent({
        text: contentText(message.content),
        limit: this.host.state.limits.maxMessageBytes,
        memberName: message.senderName,
        home: 'transcript',
        render: (fitted) => this.formatIdleNotice(message, fitted),
      });
      entries = this.formatIdleNotice(message, content);
    } else {
      entries = this.format(message);
    }
    const source: MessageSource = {
      kind: 'team-message',
      messageId: message.id,
      senderId: message.senderId,
      senderName: message.senderName,
    };
    return entries.map((entry): ChatMessage => Object.assign({}, entry, { source }));
  }

  /** The protocol's rendering of `message`, as its target's model will read it. */
  private format(message: QueuedMessage): ChatMessage[] {
    const senderColor = this.host.state.member(message.senderId)?.color;
    return this.host.protocol.formatMessage({
      message,
      sender: { name: message.senderName, ...(senderColor ? { color: senderColor } : {}) },
    });
  }

  /** An idle notification carrying `content`, through the protocol's idle line and envelope. */
  private formatIdleNotice(message: QueuedMessage, content: ContentBlock[]): ChatMessage[] {
    const text = contentText(content);
    const notice = this.host.protocol.formatIdleNotice({
      from: message.senderName,
      ...(text === '' ? {} : { text }),
    });
    return this.format({ ...message, content: textContent(notice) });
  }

  /**
   * Tells the lead this teammate is idle, with `text` (the turn's last text, or why it stopped).
   * A text too long for one message is cut to fit, with a marker saying where the rest is: a long
   * reply must reach the lead, never make the teammate fail.
   */
  private async notifyIdle(text: string, home: CutTextHome): Promise<void> {
    const { state } = this.host;
    const leadId = state.leadId;
    if (leadId === undefined || !state.isLive(this.member.id)) return;
    const holding = state
      .pending(leadId)
      .some((m) => m.kind === 'idle_notification' && m.senderId === this.member.id);
    if (holding) return;
    this.host.guard();
    const draft: QueuedMessage = {
      id: this.host.ids.next(),
      senderId: this.member.id,
      senderName: this.name,
      targetId: leadId,
      kind: 'idle_notification',
      delivery: 'wakeup',
      content: [],
    };
    const content = idleNoticeContent({
      text,
      limit: state.limits.maxMessageBytes,
      memberName: this.name,
      home,
      render: (fitted) => this.formatIdleNotice(draft, fitted),
    });
    const record = state.queueMessage({
      id: draft.id,
      senderId: draft.senderId,
      targetId: draft.targetId,
      kind: draft.kind,
      delivery: draft.delivery,
      content,
    });
    await this.host.commit(this.name, [record]);
    this.host.dispatch(record.message);
  }

  /** Handles a shutdown request: recorded, tasks released, member retired; no model call. */
  private async retire(message: QueuedMessage): Promise<void> {
    this.setActivity('running');
    await this.deliver([message]);
    this.host.guard();
    const { state } = this.host;
    const records: TeamRecord[] = [
      ...state.releaseTasksOf(this.member.id),
      state.setMemberPhase(this.member.id, 'retired'),
    ];
    await this.host.commit(this.name, records);
  }

  /**
   * A turn (or the start) threw: the runner stops with the error, its tasks go back to the
   * board, and the lead gets an idle notification saying why. The member stays `active` in the
   * log (the roster allows no `active -> failed`), so new mail revives it for another try.
   */
  private async fail(error: unknown): Promise<void> {
    const failure = toTeamError(error);
    if (this.host.closed || failure.code === 'DISPOSED') return;
    this.failure = failure;
    this.host.events.publish(this.name, {
      type: 'error',
      code: failure.code,
      message: failure.message,
    });
    if (this.isLead) return;
    try {
      const released = this.host.state.releaseTasksOf(this.member.id);
      if (released.length > 0) await this.host.commit(this.name, released);
      await this.notifyIdle(`${this.name} stopped: ${failure.code}: ${failure.message}`, 'failure');
    } catch {
      // The service broke while recording the failure; it refuses further work itself.
    }
  }

  private setActivity(activity: RunnerActivity): void {
    if (this.activity !== activity) {
      this.activity = activity;
      const status: MemberStatus =
        activity === 'stopped' ? this.stoppedStatus() : activity === 'idle' ? 'idle' : 'running';
      if (activity !== 'starting') this.host.events.publish(this.name, { type: 'status', status });
    }
    this.host.runnerChanged();
  }

  private stoppedStatus(): MemberStatus {
    if (this.failure !== undefined) return 'failed';
    const phase = this.host.state.member(this.member.id)?.phase;
    return phase === 'retired' ? 'retired' : 'inactive';
  }
}

function toTeamError(error: unknown): TeamError {
  if (TeamError.isInstance(error)) return error;
  // Turns throw only from the model call or storage; an untyped error comes from an adapter.
  return new TeamError(
    'MODEL_UNAVAILABLE',
    error instanceof Error ? error.message : String(error),
    { cause: error },
  );
}
