import type { CreateTaskInput, TaskView, TeamLimits, UpdateTaskInput } from '../state/index.js';
import type { AgentRef } from './agents.js';
import type {
  ListTasksInput,
  ListTasksResult,
  MemberInfo,
  Membership,
  SendMessageInput,
  SendMessageResult,
  SpawnTeammateInput,
  SpawnTeammateResult,
  TeamService,
  WaitForChangeInput,
  WaitForChangeResult,
} from './team-service.js';

/**
 * The team as one member sees it: the {@link TeamService} API bound to that member's credential,
 * as `TeamService.forMember` hands it out and as every tool gets it (`ToolContext.team`).
 *
 * It can act only as its member. No method takes a credential, so it cannot be pointed at another
 * member; it holds no reachable reference to the service (its methods close over it), so the lead's
 * credential and the host-only operations (`lead`, `promptLead`, `idle`, `dispose`) are out of
 * reach. Every call re-checks that the member is still live (`NOT_A_MEMBER` once it retired), and
 * lead-only calls refuse a teammate's view with `LEAD_ONLY`.
 */
export interface MemberTeamService {
  readonly teamId: string;
  readonly limits: TeamLimits;
  /** The bound member's own credential. */
  readonly agent: AgentRef;
  /** The bound member: `{agent, member, isLead, status}`. */
  membership(): Membership;
  /** Every member, lead first, with derived status. */
  listMembers(): MemberInfo[];
  /** Lead only: records a teammate, queues its prompt and starts its runner. */
  spawnTeammate(input: SpawnTeammateInput): Promise<SpawnTeammateResult>;
  /** Queues a message from the bound member (durable before this answers). */
  sendMessage(input: SendMessageInput): Promise<SendMessageResult>;
  createTask(input: CreateTaskInput): Promise<TaskView>;
  getTask(input: { taskId: string }): TaskView;
  listTasks(input?: ListTasksInput): ListTasksResult;
  /** Applies a task action as the bound member. */
  updateTask(input: UpdateTaskInput): Promise<TaskView>;
  /** See `TeamService.waitForChange`; the records are copies. */
  waitForChange(input: WaitForChangeInput): Promise<WaitForChangeResult>;
  /** Lead only: aborts the target's running turn; its inbox is kept. */
  interrupt(input: { target: string }): Promise<{ interrupted: boolean }>;
  /** Lead only: queues a shutdown request, handled at the target's next boundary. */
  shutdown(input: { target: string; reason?: string }): Promise<SendMessageResult>;
}

/**
 * Binds `service` to `agent`. The result is a frozen plain object whose methods close over both,
 * so walking its properties (or its prototype, `Object.prototype`) never reaches the service.
 */
export function bindMemberService(service: TeamService, agent: AgentRef): MemberTeamService {
  return Object.freeze({
    teamId: service.teamId,
    limits: service.limits,
    agent,
    membership: () => service.membership(agent),
    listMembers: () => service.listMembers(agent),
    spawnTeammate: (input: SpawnTeammateInput) => service.spawnTeammate(agent, input),
    sendMessage: (input: SendMessageInput) => service.sendMessage(agent, input),
    createTask: (input: CreateTaskInput) => service.createTask(agent, input),
    getTask: (input: { taskId: string }) => service.getTask(agent, input),
    listTasks: (input?: ListTasksInput) => service.listTasks(agent, input),
    updateTask: (input: UpdateTaskInput) => service.updateTask(agent, input),
    waitForChange: (input: WaitForChangeInput) => service.waitForChange(agent, input),
    interrupt: (input: { target: string }) => service.interrupt(agent, input),
    shutdown: (input: { target: string; reason?: string }) => service.shutdown(agent, input),
  });
}
