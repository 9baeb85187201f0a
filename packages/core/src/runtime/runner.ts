import { Backoff } from '../backoff.js';
import type { ChatMessage, MessageSource, ToolCall, ToolResultMessage } from '../chat.js';
import type { ContentBlock } from '../content.js';
import { clipText, textContent } from '../content.js';
import { TeamError } from '../errors.js';
import { LEAD_RETRY_INITIAL_MS, LEAD_RETRY_MAX_MS } from '../limits.js';
import type { MemberStatus } from '../ports/events.js';
import type { SystemBlock } from '../ports/model.js';
import type { Member, MemberWorkspace, QueuedMessage, TeamRecord } from '../records.js';
import type { Approval } from '../state/index.js';
import { isLivePhase } from '../state/index.js';
import { messageBytes } from '../transcript-context.js';
import {
  interruptedResult,
  notRunResult,
  runToolCall,
  runTurn,
  type ToolSet,
} from './agent-loop.js';
import type { AgentDefinition } from './agents.js';
import {
  approvalRequestText,
  approverOf,
  decisionRecords,
  GATE_REFUSALS_DEFAULT,
  isLostDecision,
  needsApproval,
  notRunText,
  openCalls,
  reopenParkedCalls,
} from './approvals.js';
import { isWriteFailure } from './commit-pipeline.js';
import { ContextKeeper, resolveContextBudget } from './context-budget.js';
import { Conversation, loadTranscript } from './conversation.js';
import {
  type CutTextHome,
  endsInTurn,
  idleNoticeId,
  turnEndNoticeId,
  turnToFinish,
} from './idle-notice.js';
import {
  appendToTranscript,
  deliveredRecords,
  deliverMessages,
  orderByPolicy,
  pickWith,
  queueIdleNotice,
  type RenderedMail,
  renderMessage,
} from './mail-delivery.js';
import type { MemberPlace } from './member-workspaces.js';
import { RepeatedFailureGuard } from './repeated-failures.js';
import { retireMember } from './retirement.js';
import type { RunnerHost } from './runner-host.js';
import type { AgentRef, TeamGates, TurnOutcome } from './service-types.js';

/** Why a runner stops without reporting a failure (see `fail`). */
const QUIET_STOPS: ReadonlySet<string> = new Set(['DISPOSED', 'FENCED', 'NOT_PLACED_HERE']);

/** What a runner is doing. `stopped`: its loop ended (disposed, retired or failed). */
export type RunnerActivity = 'starting' | 'running' | 'idle' | 'stopped';

type Work =
  | { type: 'shutdown'; message: QueuedMessage }
  | { type: 'resolve' }
  | { type: 'host'; prompt: HostPrompt }
  | { type: 'resume'; taskId: string }
  | { type: 'message'; message: QueuedMessage }
  | { type: 'claim'; taskId: string }
  | { type: 'finish' };

interface HostPrompt {
  content: ContentBlock[];
  resolve(outcome: TurnOutcome): void;
  reject(error: unknown): void;
}

/**
 * Drives one member: the teammate runner loop, or (for the lead) the lead inbox pump. Both are
 * `loop { pick work at the turn boundary -> run a turn -> ... -> park until mail }`; they differ
 * in what counts as work. A teammate handles a pending shutdown request before anything else and
 * ends without calling the model (a rule of core: the team policy is never asked, so no policy
 * can hold a shutdown back); other mail goes in the policy's order. After each turn it sends the lead an idle notification
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
  /** The failure a turn already published as an `error` event, so `fail` does not repeat it. */
  private published: TeamError | undefined;
  private conversation: Conversation | undefined;
  /** Keeps the conversation within the member's context budget, when it has one. */
  private keeper: ContextKeeper | undefined;
  private place: MemberPlace | undefined;
  private preparing: Promise<void> | undefined;
  private loopDone: Promise<void> | undefined;
  private wake: (() => void) | undefined;
  private woken = false;
  /**
   * Tasks this member failed to claim since it last parked (another member, maybe in another
   * process, took them first): it goes on to the next ready task at once rather than park with
   * work on the board, and tries none of these again before the board changes or the retry
   * interval passes (never spinning on a failing claim).
   */
  private readonly claimsLost = new Set<string>();
  /**
   * Set when a turn ended on a repeated failure: the member neither claims nor resumes until new
   * mail reaches it (the lead was told), so a loop cannot restart on its own.
   */
  private stalled = false;
  /** Set by {@link interrupt}; the turn it ends schedules the member's own tasks to resume. */
  private interrupted = false;
  /**
   * The lead's waits after failed turns: while one runs (`retryCancel` set) the lead starts no
   * turn on its mail, only on a host prompt, so a refusal that persists cannot spin it.
   */
  private readonly retryWaits = new Backoff({
    initialDelayMs: LEAD_RETRY_INITIAL_MS,
    maxDelayMs: LEAD_RETRY_MAX_MS,
  });
  private retryCancel: (() => void) | undefined;
  /**
   * Tasks this member had in progress and gave back to the board itself (released): idle-claim
   * does not take them again, or a member that declined a task would claim it for ever.
   */
  private readonly declined = new Set<string>();
  /** The in-progress tasks this member owned at the last turn boundary. */
  private owned = new Set<string>();
  private readonly failures: RepeatedFailureGuard;
  private stopping = false;
  /** Set by {@link handOver}: the loop ends at its next turn boundary. */
  private handingOver = false;
  /**
   * Set by {@link prepare} when the transcript ends within a turn the lead never heard the end of
   * (see `turnToFinish`; for the lead itself, a turn on team mail that never ended with a reply:
   * its process stopped in it), and after a lead turn on such mail failed: the member finishes it
   * before anything but mail; any turn clears it. Otherwise nothing would: the mail that started
   * it is delivered.
   */
  private unfinished = false;
  /** Why host prompts still waiting are refused once the loop ends (default `DISPOSED`). */
  private stopReason: TeamError | undefined;
  private turnAbort: AbortController | undefined;
  private readonly hostPrompts: HostPrompt[] = [];
  private readonly resumeTasks: string[];
  private readonly system: SystemBlock[];
  private readonly tools: ToolSet;
  /** The tools of plan mode (plan-approval types only), until a plan is approved. */
  private readonly planTools: ToolSet | undefined;
  /** Expiry timers of the approvals this member waits for, by approval id. */
  private readonly expiries = new Map<string, () => void>();

  constructor(
    private readonly host: RunnerHost,
    readonly member: Member,
    private readonly definition: AgentDefinition,
    options: { isLead: boolean; resumeTasks?: readonly string[]; teammates?: readonly string[] },
  ) {
    this.isLead = options.isLead;
    this.resumeTasks = [...(options.resumeTasks ?? [])];
    this.ref = host.refFor(member.id);
    this.failures = new RepeatedFailureGuard(host.maxRepeatedFailures);
    this.tools = host.toolsFor(member, definition);
    this.planTools =
      definition.planApproval === true && !options.isLead
        ? host.toolsFor(member, definition, 'plan')
        : undefined;
    this.system = [{ text: definition.systemPrompt, cacheable: true }];
    if (!this.isLead) {
      this.system.push({
        text: host.format.formatInitialPrompt({
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

  /**
   * True while the member owes a turn no mail will start: one its process stopped in, or a lead
   * turn that failed and is finished after the retry wait. `idle()` waits for it, as it waits for
   * pending wakeup mail.
   */
  get owesTurn(): boolean {
    return this.live && this.unfinished && !this.stalled;
  }

  /** True while the member waits for a decision on an approval: its mail waits with it. */
  get awaitingApproval(): boolean {
    const [first] = openCalls(this.conversation?.messages ?? []);
    if (first === undefined) return false;
    return this.host.state.approvalForCall(this.member.id, first.id)?.status === 'pending';
  }

  /** The derived status of an active member with this runner. */
  get status(): MemberStatus {
    if (this.failure !== undefined) return 'failed';
    if (this.activity === 'stopped') return 'inactive';
    return this.busy ? 'running' : 'idle';
  }

  /** The member's own workspace, once {@link prepare} acquired it (isolated members only). */
  get workspace(): MemberWorkspace | undefined {
    return this.place?.workspace;
  }

  /** The loaded conversation (after {@link prepare}). */
  get messages(): readonly ChatMessage[] {
    return this.conversation?.messages ?? [];
  }

  /**
   * Finds where the member works (an isolated member's workspace is acquired first: it never
   * runs in the shared directory instead), then loads its transcript (once). `seed` is written
   * first when the transcript is empty: a forked teammate's copy of the lead's conversation (or a
   * function that loads it, called only then).
   */
  prepare(seed?: readonly ChatMessage[] | (() => Promise<readonly ChatMessage[]>)): Promise<void> {
    this.preparing ??= (async () => {
      this.place = await this.host.workspaces.placeOf(this.member);
      // Calls left waiting for an approval stay open, to be resolved once it is decided.
      const loaded = await loadTranscript(this.host.transcripts, this.member.id);
      const { state } = this.host;
      this.unfinished =
        turnToFinish(this.member.id, loaded, (id) => state.wasQueued(id))?.kind === 'unfinished';
      const entries = reopenParkedCalls(loaded, state, this.member.id);
      const conversation = new Conversation(
        this.member.id,
        this.host.transcripts,
        this.host.clock,
        () => this.host.guard(),
        entries,
        {
          pendingIds: () => this.host.state.pending(this.member.id).map((message) => message.id),
          reload: async () =>
            reopenParkedCalls(
              await loadTranscript(this.host.transcripts, this.member.id),
              state,
              this.member.id,
            ),
        },
      );
      if (entries.length === 0 && seed !== undefined) {
        await conversation.append(typeof seed === 'function' ? await seed() : seed);
      }
      this.conversation = conversation;
      this.keeper = this.keeperFor(conversation);
    })();
    return this.preparing;
  }

  private keeperFor(conversation: Conversation): ContextKeeper | undefined {
    const { definition, host } = this;
    const budget =
      definition.context === undefined
        ? host.contextBudget
        : resolveContextBudget(definition.context, `agent type "${definition.type}"`);
    if (budget === undefined) return undefined;
    return new ContextKeeper({
      agentName: this.name,
      budget,
      model: definition.model,
      system: this.system,
      tools: this.tools.definitions,
      conversation,
      events: host.events,
      clock: host.clock,
      ids: host.ids,
      // The prompt of a task this member still works on stays verbatim through a compaction.
      retain: (message) => {
        if (message.source?.kind !== 'task-claim') return false;
        const task = host.state.task(message.source.taskId);
        return task?.status === 'in_progress' && task.ownerId === this.member.id;
      },
    });
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
        for (const cancel of this.expiries.values()) cancel();
        this.expiries.clear();
        for (const prompt of this.hostPrompts.splice(0)) {
          prompt.reject(
            this.failure ??
              this.stopReason ??
              new TeamError('DISPOSED', 'the team service was disposed'),
          );
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

  /**
   * Aborts the running turn, if any. The inbox is kept, and so are the member's tasks: a task it
   * has in progress is resumed on its next turn, after any mail that woke it (see `nextWork`).
   */
  interrupt(): boolean {
    if (this.turnAbort === undefined || this.turnAbort.signal.aborted) return false;
    this.interrupted = true;
    this.turnAbort.abort(new TeamError('ABORTED', `${this.name} was interrupted`));
    return true;
  }

  /**
   * Stops the loop: the running turn is aborted and nothing more is written. `reason` is what
   * waiting host prompts are refused with (default `DISPOSED`), e.g. `NOT_PLACED_HERE` when the
   * member moved to another process.
   */
  stop(reason?: TeamError): Promise<void> {
    this.stopReason ??= reason;
    this.stopping = true;
    this.retryCancel?.();
    this.turnAbort?.abort(
      this.stopReason ?? new TeamError('DISPOSED', 'the team service was disposed'),
    );
    this.notify();
    return this.loopDone ?? Promise.resolve();
  }

  /**
   * Ends the loop at its next turn boundary: a running turn finishes (its records and transcript
   * written), a parked member (idle, or waiting for an approval) stops at once; then nothing more
   * is written, so another process can take the member over without redoing anything. `reason` is
   * what waiting host prompts are refused with. Resolves when the loop ended.
   */
  handOver(reason: TeamError): Promise<void> {
    this.stopReason ??= reason;
    this.handingOver = true;
    if (this.wake !== undefined) this.notify();
    return this.loopDone ?? Promise.resolve();
  }

  /** Queues a host prompt for the lead; resolves with the outcome of the turn it starts. */
  prompt(content: ContentBlock[]): Promise<TurnOutcome> {
    if (!this.live || this.stopping) {
      return Promise.reject(
        this.failure ??
          this.stopReason ??
          new TeamError('DISPOSED', 'the team service was disposed'),
      );
    }
    return new Promise<TurnOutcome>((resolve, reject) => {
      this.hostPrompts.push({ content, resolve, reject });
      this.notify();
    });
  }

  // ------------------------------------------------------------------ loop

  private async loop(): Promise<void> {
    while (!this.stopping && !this.handingOver) {
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
    const { state, policy } = this.host;
    const pending = this.host.deliverable(this.member.id);
    // Core's rule, before any policy: a pending shutdown ends a teammate (the lead gets none).
    if (!this.isLead) {
      const shutdown = pending.find((m) => m.kind === 'shutdown_request');
      if (shutdown !== undefined) return { type: 'shutdown', message: shutdown };
    }
    // Calls left open by a step that waits for an approval come first: the model cannot be
    // called again before each has its result. While the approval is pending the member parks.
    const open = openCalls(this.conversation?.messages ?? []);
    if (open.length > 0) {
      const approval = state.approvalForCall(this.member.id, (open[0] as ToolCall).id);
      if (approval?.status === 'pending') {
        this.armExpiry(approval);
        return undefined;
      }
      return { type: 'resolve' };
    }
    const prompt = this.hostPrompts.shift();
    if (prompt !== undefined) return { type: 'host', prompt };
    if (this.retryCancel !== undefined) return undefined;
    const owned = this.noteOwnedTasks();
    // Mail first: it may change what the member should do with its task (an operator's note
    // after an interrupt, the lead's answer); the task resumes on the turn after.
    const wakeup = pending.find((m) => m.delivery === 'wakeup');
    if (wakeup !== undefined) {
      const picked = pickWith(policy, pending, state.leadId ?? '', wakeup);
      if (picked !== undefined) return { type: 'message', message: picked };
    }
    if (this.stalled) return undefined;
    while (this.resumeTasks.length > 0) {
      const taskId = this.resumeTasks.shift() as string;
      if (owned.has(taskId)) return { type: 'resume', taskId };
    }
    // A turn its process stopped in (after its input was durable) is finished here.
    if (this.unfinished) return { type: 'finish' };
    // One task at a time: a member that still owns a task in progress (it ended its turn waiting
    // for an answer, say) claims no other one.
    if (!this.isLead && this.host.idleClaimIntervalMs !== undefined && owned.size === 0) {
      const ready = state
        .listTasks({ ready: true })
        .find((task) => !this.declined.has(task.id) && !this.claimsLost.has(task.id));
      if (ready !== undefined) return { type: 'claim', taskId: ready.id };
    }
    return undefined;
  }

  /**
   * The tasks this member has in progress now; one it had at the last boundary and that went back
   * to the board unowned since was released by it (its runner is live, so no failure released
   * it): it is declined.
   */
  private noteOwnedTasks(): ReadonlySet<string> {
    const { state } = this.host;
    const owned = new Set(
      state
        .listTasks({ status: 'in_progress' })
        .filter((task) => task.ownerId === this.member.id)
        .map((task) => task.id),
    );
    for (const taskId of this.owned) {
      if (owned.has(taskId)) continue;
      const task = state.task(taskId);
      if (task?.status === 'pending' && task.ownerId === undefined) this.declined.add(taskId);
    }
    this.owned = owned;
    return owned;
  }

  private async park(): Promise<void> {
    this.woken = false;
    this.claimsLost.clear();
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
    this.unfinished = false;
    if (work.type === 'claim') {
      this.host.guard();
      try {
        await this.host.commit(this.member, () => [
          state.updateTask(this.member.id, { taskId: work.taskId, action: { type: 'claim' } }),
        ]);
      } catch (error) {
        // The task changed under us (here, or in another process first): the next ready task
        // is claimed at once; this one is tried again only after the member parked.
        if (TeamError.isInstance(error) && !isWriteFailure(error)) {
          this.claimsLost.add(work.taskId);
          return;
        }
        throw error;
      }
      this.owned.add(work.taskId);
    }
    this.setActivity('running');
    const abort = new AbortController();
    this.turnAbort = abort;
    try {
      switch (work.type) {
        case 'message': {
          // A turn starts after the latest exchange, so the context can be compacted around the
          // message: it only has to fit the member's largest message at all.
          const deliver = await this.fitting([work.message], Number.POSITIVE_INFINITY);
          if (deliver.messages.length === 0) return;
          events.publish(this.name, {
            type: 'turn.start',
            reason: 'message',
            messageId: work.message.id,
          });
          await this.deliver(deliver);
          break;
        }
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
          // A member revived or interrupted mid-task has the task's prompt and what it did since
          // in its transcript: it is told to go on, not to start the task again.
          const resumed =
            work.type === 'resume' &&
            conversation.messages.some(
              (m) => m.source?.kind === 'task-claim' && m.source.taskId === work.taskId,
            );
          const text = this.host.policy.formatTaskClaimPrompt({
            task,
            openTasks,
            ...(resumed ? { resumed } : {}),
          });
          await conversation.append([{ role: 'user', content: textContent(text), source }]);
          break;
        }
        case 'resolve': {
          events.publish(this.name, { type: 'turn.start', reason: 'approval' });
          if ((await this.resolveOpenCalls(abort.signal)) === 'park') {
            events.publish(this.name, {
              type: 'turn.end',
              stopReason: 'awaiting_approval',
              steps: 0,
              text: '',
            });
            return;
          }
          // What arrived while it waited is read now, after the calls' results.
          if ((await this.stepBoundary()) === 'stop') return;
          break;
        }
        case 'finish':
          // nothing to add: the model answers the conversation as its transcript holds it
          events.publish(this.name, { type: 'turn.start', ...startedBy(conversation.messages) });
          break;
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
        tools: this.toolsNow(),
        conversation,
        toolContext: {
          agent: this.ref,
          team: this.host.memberService(this.ref),
          cwd: (this.place as MemberPlace).cwd,
        },
        signal: abort.signal,
        maxSteps: this.definition.maxSteps ?? this.host.maxSteps,
        events,
        promptCacheKey: `${this.host.teamId}:${this.member.id}`,
        beforeStep: () => this.stepBoundary(),
        failures: this.failures,
        approve: (call) => this.approveCall(call),
        ...(this.keeper === undefined ? {} : { budget: this.keeper }),
      });
      events.publish(this.name, {
        type: 'turn.end',
        stopReason: outcome.stopReason === 'stopped' ? 'interrupted' : outcome.stopReason,
        steps: outcome.steps,
        text: outcome.text,
      });
      if (outcome.stopReason === 'interrupted' && this.interrupted && !this.stopping) {
        for (const taskId of this.noteOwnedTasks()) {
          if (!this.resumeTasks.includes(taskId)) this.resumeTasks.push(taskId);
        }
      }
      if (work.type === 'claim') this.noteOwnedTasks();
      if (work.type === 'host') work.prompt.resolve(outcome);
      this.endRetryWait();
      if (outcome.stopReason === 'repeated_failure') {
        this.stalled = true;
        if (!this.isLead) await this.notifyIdle(this.loopNotice(), 'failure');
      } else if (!this.isLead && outcome.stopReason !== 'awaiting_approval') {
        await this.idleUnlessGated(outcome);
      }
    } catch (error) {
      if (work.type === 'host') work.prompt.reject(error);
      if (this.host.closed || this.stopping) throw error;
      const failure = toTeamError(error);
      if (QUIET_STOPS.has(failure.code)) {
        // Another process runs this member now: a store refused the turn's write before the
        // placement said so. Nothing failed; the member goes on there, and this runner stops.
        if (failure.code === 'FENCED') this.host.fenced(this.member.id);
        throw failure;
      }
      events.publish(this.name, { type: 'error', code: failure.code, message: failure.message });
      this.published = failure;
      events.publish(this.name, { type: 'turn.end', stopReason: 'error', steps: 0, text: '' });
      // The lead cannot fail: the host sees the error and may prompt it again. Its mail waits a
      // while before the next try, so a failure that persists is not retried in a tight loop;
      // a turn on mail it already took (a model call that failed, say) is finished after the
      // wait, since no mail is left to start it again and the teammates may wait for it.
      if (!this.isLead) throw failure;
      this.unfinished = endsInTurn(conversation.messages);
      this.waitToRetry();
    } finally {
      this.turnAbort = undefined;
      this.interrupted = false;
    }
  }

  /** Starts the next of the lead's waits after a failed turn (see `retryWaits`). */
  private waitToRetry(): void {
    this.retryCancel?.();
    const cancel = this.host.clock.setTimer(this.retryWaits.next(), () => {
      if (this.retryCancel !== cancel) return;
      this.retryCancel = undefined;
      this.notify();
    });
    this.retryCancel = cancel;
  }

  /** A turn ended cleanly: the lead's mail is taken at once again, its waits start over. */
  private endRetryWait(): void {
    this.retryCancel?.();
    this.retryCancel = undefined;
    this.retryWaits.reset();
  }

  /** What the lead reads when this member ended a turn on a repeated failure. */
  private loopNotice(): string {
    const repeat = this.failures.last;
    const what =
      repeat === undefined
        ? 'the same tool call'
        : `its call to ${repeat.tool} (${clipText(repeat.text, 300)})`;
    return (
      `${this.name} stopped: ${what} failed the same way ${this.failures.max} times in a row. ` +
      'It takes no new task until it gets a message: tell it what to do differently, or shut it down.'
    );
  }

  /**
   * The step boundary inside a turn: a pending shutdown ends the turn here (core's rule, before
   * any policy); otherwise all pending mail, quiet or not, is recorded now, in policy order.
   */
  private async stepBoundary(): Promise<'continue' | 'stop'> {
    if (this.stopping) return 'stop';
    const pending = this.host.deliverable(this.member.id);
    if (pending.length === 0) return 'continue';
    if (!this.isLead && pending.some((m) => m.kind === 'shutdown_request')) return 'stop';
    const ordered = orderByPolicy(this.host.policy, pending, this.host.state.leadId ?? '');
    await this.deliver(
      await this.fitting(ordered, this.keeper?.room() ?? Number.POSITIVE_INFINITY),
    );
    return 'continue';
  }

  /**
   * Of `messages` (in order), those to record now: as many as fit in `room` bytes of the member's
   * context, in order, stopping at the first that does not (it stays pending for a later boundary
   * or turn, never marked delivered into a context that would be refused). A message larger than
   * any context of the member can be is dead-lettered (`EXCEEDS_CONTEXT`) and its sender told.
   * The entries rendered to measure them are kept, so delivery records what was measured.
   */
  private async fitting(messages: readonly QueuedMessage[], room: number): Promise<Fitting> {
    const keeper = this.keeper;
    if (keeper === undefined) return { messages: [...messages] };
    const largest = keeper.largestMessage();
    const conversation = this.conversation as Conversation;
    const deliver: QueuedMessage[] = [];
    const rendered = new Map<string, readonly ChatMessage[]>();
    const tooLarge: { message: QueuedMessage; bytes: number }[] = [];
    let used = 0;
    for (const message of messages) {
      let bytes = 0;
      if (!conversation.holds(message.id)) {
        const entries = renderMessage(this.host, message);
        for (const entry of entries) bytes += messageBytes(entry);
        rendered.set(message.id, entries);
      }
      if (bytes > largest) {
        tooLarge.push({ message, bytes });
        continue;
      }
      if (used + bytes > room) break;
      used += bytes;
      deliver.push(message);
    }
    if (tooLarge.length > 0) await this.refuseTooLarge(tooLarge, largest);
    return { messages: deliver, rendered };
  }

  /** Dead-letters messages no context of this member can hold, and tells each sender. */
  private async refuseTooLarge(
    letters: readonly { message: QueuedMessage; bytes: number }[],
    largest: number,
  ): Promise<void> {
    const { state } = this.host;
    try {
      await this.host.commit(this.member, () =>
        letters.flatMap(({ message, bytes }) => {
          if (!state.isPending(message.id)) return [];
          const detail = `${bytes} bytes; ${this.name}'s context holds messages of at most ${largest} bytes`;
          const out: TeamRecord[] = [
            state.deadLetter({ messageId: message.id, reason: 'EXCEEDS_CONTEXT', detail }),
          ];
          const sender = state.member(message.senderId);
          if (sender !== undefined && isLivePhase(sender.phase) && sender.id !== this.member.id) {
            out.push(
              state.queueMessage({
                id: this.host.ids.next(),
                senderId: this.member.id,
                targetId: sender.id,
                kind: 'message',
                delivery: 'wakeup',
                content: textContent(
                  `Your message ${message.summary === undefined ? message.id : `"${message.summary}"`} ` +
                    `to ${this.name} was not delivered: it is too large for ${this.name}'s context ` +
                    `(${detail}). Send it in smaller parts, or point to a file.`,
                ),
              }),
            );
          }
          return out;
        }),
      );
    } catch (error) {
      if (!TeamError.isInstance(error)) throw error;
      // The service broke or the member moved; another boundary or process decides again.
    }
  }

  private deliver({ messages, rendered }: Fitting): Promise<void> {
    // New mail is something new to go on: a stalled member may act again, repeats count afresh.
    this.stalled = false;
    this.failures.reset();
    return deliverMessages(
      this.host,
      this.conversation as Conversation,
      this.member,
      messages,
      rendered,
    );
  }

  // ------------------------------------------------------------ approvals and gates

  /** The tools the member has now: plan mode's until its plan is approved, then all. */
  private toolsNow(): ToolSet {
    if (this.planTools === undefined || this.host.state.planApproved(this.member.id)) {
      return this.tools;
    }
    return this.planTools;
  }

  /** Before a call runs: one that needs approval is requested, and the turn parks. */
  private approveCall(call: ToolCall): 'run' | Promise<'park'> {
    if (!needsApproval(this.definition, this.toolsNow(), call)) return 'run';
    return this.requestApproval(call).then(() => 'park' as const);
  }

  /** Records the request for `call` and mails its approver (when a member decides). */
  private async requestApproval(call: ToolCall): Promise<void> {
    const { state, ids, clock } = this.host;
    const id = ids.next();
    const mailId = ids.next();
    const expiresIn = this.definition.approval?.expiresInMs;
    await this.host.commit(this.member, () => {
      const approverId = approverOf(state, this.member, this.definition);
      const taskId = [...this.owned][0];
      const requested = state.requestApproval({
        id,
        kind: 'tool',
        requesterId: this.member.id,
        approverId,
        toolCallId: call.id,
        toolName: call.name,
        input: call.input,
        taskId,
        expiresAt: expiresIn === undefined ? undefined : clock.now() + expiresIn,
      });
      if (approverId === undefined) return [requested];
      return [
        requested,
        state.queueMessage({
          id: mailId,
          senderId: this.member.id,
          targetId: approverId,
          kind: 'approval_request',
          delivery: 'wakeup',
          content: textContent(approvalRequestText(state.getApproval(id), this.name)),
          summary: clipText(`approve ${call.name}?`, 200),
          approvalId: id,
        }),
      ];
    });
  }

  /**
   * Gives each call left open its result, in order: an approved one runs (recorded as started
   * first, so it never runs twice; one that started before a crash is answered as interrupted,
   * outcome unknown), a rejected or expired one is answered with why, and one that needs approval
   * and has none asks for it. `park` when a call still waits for its decision.
   */
  private async resolveOpenCalls(signal: AbortSignal): Promise<'done' | 'park'> {
    const { state, events } = this.host;
    const conversation = this.conversation as Conversation;
    const context = this.toolContext(signal);
    for (const call of openCalls(conversation.messages)) {
      let result: ToolResultMessage;
      const approval = state.approvalForCall(this.member.id, call.id);
      if (signal.aborted) {
        result = interruptedResult(call);
      } else if (approval === undefined) {
        if ((await this.approveCall(call)) === 'park') return 'park';
        result = await runToolCall(this.toolsNow(), call, context, events, this.name);
      } else if (approval.status === 'pending') {
        this.armExpiry(approval);
        return 'park';
      } else if (approval.status !== 'approved') {
        result = notRunResult(call, notRunText(approval));
      } else if (approval.started === true) {
        result = interruptedResult(call);
      } else {
        await this.host.commit(this.member, () => [state.startApprovedCall(approval.id)]);
        result = await runToolCall(this.toolsNow(), call, context, events, this.name);
      }
      // The decision's message is delivered as the call's result: the member reads the outcome
      // where it stopped, not as a new prompt after it.
      const decision =
        approval === undefined
          ? undefined
          : state
              .pending(this.member.id)
              .find((m) => m.kind === 'approval_decision' && m.approvalId === approval.id);
      if (decision !== undefined && !conversation.holds(decision.id)) {
        result = {
          ...result,
          source: {
            kind: 'team-message',
            messageId: decision.id,
            senderId: decision.senderId,
            senderName: decision.senderName,
          },
        };
      }
      await conversation.append([result]);
      if (decision !== undefined) {
        await this.host.commit(this.member, () => deliveredRecords(this.host, [decision]));
      }
    }
    return 'done';
  }

  /** A member shut down while it waited: its requests are canceled, its open calls answered. */
  private async closeOpenCalls(): Promise<void> {
    const { state } = this.host;
    const conversation = this.conversation as Conversation;
    const open = openCalls(conversation.messages);
    if (open.length === 0) return;
    try {
      await this.host.commit(this.member, () =>
        open.flatMap((call) => {
          const approval = state.approvalForCall(this.member.id, call.id);
          if (approval?.status !== 'pending') return [];
          return [
            state.decideApproval({
              approvalId: approval.id,
              decision: 'canceled',
              reason: `${this.name} was shut down before it was decided`,
            }),
          ];
        }),
      );
    } catch (error) {
      if (!isLostDecision(error)) throw error;
    }
    await conversation.append(
      open.map((call) => {
        const approval = state.approvalForCall(this.member.id, call.id);
        return approval === undefined || approval.status === 'pending'
          ? notRunResult(call, `Not run: ${this.name} was shut down first.`)
          : notRunResult(call, notRunText(approval));
      }),
    );
  }

  /** Expires `approval` when its time comes, if it is still pending then. */
  private armExpiry(approval: Approval): void {
    if (approval.expiresAt === undefined || this.expiries.has(approval.id)) return;
    const { clock, state, ids } = this.host;
    const cancel = clock.setTimer(Math.max(0, approval.expiresAt - clock.now()), () => {
      this.expiries.delete(approval.id);
      if (this.stopping || state.approval(approval.id)?.status !== 'pending') return;
      const messageId = ids.next();
      this.host
        .commit(this.member, () =>
          decisionRecords(state, {
            approvalId: approval.id,
            decision: 'expired',
            reason: 'no decision came in time',
            messageId,
          }),
        )
        .catch((error: unknown) => {
          // A decision came first, or the service broke (it refuses further work itself).
          if (!isLostDecision(error) && !TeamError.isInstance(error)) throw error;
        })
        .finally(() => this.notify());
    });
    this.expiries.set(approval.id, cancel);
  }

  /**
   * A teammate's turn ended: the host's idle gate (if any, and under its refusal bound) may send
   * it back to work with feedback; otherwise the lead hears it is idle.
   */
  private idleUnlessGated(outcome: TurnOutcome): Promise<void> {
    const { state, gates } = this.host;
    const gate = gates?.teammateIdle;
    const max = gates?.maxRefusals ?? GATE_REFUSALS_DEFAULT;
    const leadId = state.leadId;
    if (
      gate === undefined ||
      outcome.stopReason !== 'end_turn' ||
      leadId === undefined ||
      !state.isLive(leadId) ||
      state.gateCount('teammate_idle', this.member.id) >= max
    ) {
      return this.notifyIdle(outcome.text, 'transcript');
    }
    return this.gateIdle(outcome, gate, max, leadId);
  }

  /** Asks the idle gate; a refusal is recorded and sent to the member (and the lead at the bound). */
  private async gateIdle(
    outcome: TurnOutcome,
    gate: NonNullable<TeamGates['teammateIdle']>,
    max: number,
    leadId: string,
  ): Promise<void> {
    const { state, ids } = this.host;
    const tasks = state
      .listTasks({ status: 'in_progress' })
      .filter((task) => task.ownerId === this.member.id);
    let verdict: Awaited<ReturnType<typeof gate>>;
    try {
      verdict = await gate({ member: this.member, text: outcome.text, tasks });
    } catch (error) {
      verdict = {
        allow: false,
        feedback: `the idle gate failed: ${error instanceof Error ? error.message : String(error)}`,
      };
    }
    if (verdict.allow) {
      await this.notifyIdle(outcome.text, 'transcript');
      return;
    }
    const feedbackId = ids.next();
    const noticeId = ids.next();
    await this.host.commit(this.member, () => {
      const refused = state.refuseByGate({
        gate: 'teammate_idle',
        memberId: this.member.id,
        feedback: verdict.feedback,
      });
      const records: TeamRecord[] = [
        refused,
        state.queueMessage({
          id: feedbackId,
          senderId: leadId,
          targetId: this.member.id,
          kind: 'gate_feedback',
          delivery: 'wakeup',
          content: textContent(`Not done yet (the idle gate): ${refused.feedback}`),
          summary: 'idle gate feedback',
        }),
      ];
      if (refused.attempt >= max) {
        records.push(
          state.queueMessage({
            id: noticeId,
            senderId: this.member.id,
            targetId: leadId,
            kind: 'gate_feedback',
            delivery: 'wakeup',
            content: textContent(
              `The idle gate refused ${this.name} ${refused.attempt} times in a row; its last feedback: ${refused.feedback}. It is not asked again until ${this.name} next goes idle: decide what ${this.name} should do.`,
            ),
            summary: `${this.name}: idle gate refused ${refused.attempt} times`,
          }),
        );
      }
      return records;
    });
  }

  private toolContext(signal: AbortSignal) {
    return Object.freeze({
      agent: this.ref,
      team: this.host.memberService(this.ref),
      cwd: (this.place as MemberPlace).cwd,
      signal,
    });
  }

  /**
   * Tells the lead this teammate is idle. A turn that ended with a reply gets the notice id that
   * reply names (`idleNoticeId`), so a process taking the member over before the notice was
   * durable writes it there, once (see `RunnerPool.settleIdleNotice`).
   */
  private notifyIdle(text: string, home: CutTextHome): Promise<void> {
    const reply = home === 'transcript' ? this.conversation?.lastReply() : undefined;
    if (reply !== undefined) {
      return queueIdleNotice(
        this.host,
        this.member,
        text,
        home,
        idleNoticeId(this.member.id, reply),
      );
    }
    // Any other end is named after the transcript's last write, so a process taking the member
    // over knows the lead was told (`turnToFinish`); a second notice for the same end (a turn that
    // wrote nothing) gets an id of its own.
    const at = this.conversation?.endAt;
    let id = at === undefined ? undefined : turnEndNoticeId(this.member.id, at);
    if (id !== undefined && this.host.state.wasQueued(id)) id = undefined;
    return queueIdleNotice(this.host, this.member, text, home, id);
  }

  /**
   * Handles a shutdown request: recorded, workspace released, tasks released, member retired; no
   * model call.
   */
  private async retire(message: QueuedMessage): Promise<void> {
    this.setActivity('running');
    await this.closeOpenCalls();
    await appendToTranscript(this.host, this.conversation as Conversation, [message]);
    const member = this.host.state.member(this.member.id) ?? this.member;
    await retireMember(this.host, member, [message]);
  }

  /**
   * A turn (or the start) threw: the runner stops with the error, its tasks go back to the
   * board, and the lead gets an idle notification saying why. The member stays `active` in the
   * log (the roster allows no `active -> failed`), so new mail revives it for another try.
   */
  private async fail(error: unknown): Promise<void> {
    const failure = toTeamError(error);
    // DISPOSED: stopped on purpose. FENCED, NOT_PLACED_HERE: another process runs this member
    // now (the store refused a write for it, or the placement moved it); it goes on there, from
    // its transcript, and this runner just stops.
    if (this.host.closed || QUIET_STOPS.has(failure.code)) return;
    this.failure = failure;
    if (failure !== this.published) {
      this.host.events.publish(this.name, {
        type: 'error',
        code: failure.code,
        message: failure.message,
      });
    }
    if (this.isLead) return;
    try {
      await this.host.commit(this.member, () => this.host.state.releaseTasksOf(this.member.id));
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

/** Messages to record now, with the entries rendered to measure them (by message id). */
interface Fitting {
  messages: readonly QueuedMessage[];
  rendered?: RenderedMail;
}

/**
 * What a finished turn reports as its start: the latest input its conversation holds (team mail,
 * a task prompt), else the host.
 */
function startedBy(
  messages: readonly ChatMessage[],
):
  | { reason: 'message'; messageId: string }
  | { reason: 'task-claim'; taskId: string }
  | { reason: 'host' } {
  for (let i = messages.length - 1; i >= 0; i--) {
    const source = messages[i]?.source;
    if (source?.kind === 'team-message') return { reason: 'message', messageId: source.messageId };
    if (source?.kind === 'task-claim') return { reason: 'task-claim', taskId: source.taskId };
    if (source?.kind === 'host') break;
  }
  return { reason: 'host' };
}
