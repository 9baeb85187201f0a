import type { ApprovalFilter, CreateTaskInput, UpdateTaskInput } from '../state/index.js';
import type { DecideInput } from './approvals.js';
import type {
  AgentRef,
  ListTasksInput,
  MemberTeamService,
  ReadInboxInput,
  SendMessageInput,
  SpawnTeammateInput,
  TeamService,
  WaitForChangeInput,
} from './service-types.js';

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
    progress: () => service.progress(agent),
    spawnTeammate: (input: SpawnTeammateInput) => service.spawnTeammate(agent, input),
    sendMessage: (input: SendMessageInput) => service.sendMessage(agent, input),
    createTask: (input: CreateTaskInput) => service.createTask(agent, input),
    getTask: (input: { taskId: string }) => service.getTask(agent, input),
    listTasks: (input?: ListTasksInput) => service.listTasks(agent, input),
    updateTask: (input: UpdateTaskInput) => service.updateTask(agent, input),
    waitForChange: (input: WaitForChangeInput) => service.waitForChange(agent, input),
    interrupt: (input: { target: string }) => service.interrupt(agent, input),
    shutdown: (input: { target: string; reason?: string | undefined }) =>
      service.shutdown(agent, input),
    readInbox: (input?: ReadInboxInput) => service.readInbox(agent, input),
    ackInbox: (input: { cursor: string }) => service.ackInbox(agent, input),
    watchInbox: (listener: () => void) => service.watchInbox(agent, listener),
    decide: (input: DecideInput) => service.decide(input, agent),
    approvals: (filter?: ApprovalFilter) => service.approvals(filter),
    submitPlan: (input: { plan: string }) => service.submitPlan(agent, input),
  });
}
