import { TeamError } from '../errors.js';
import type { TeamRecord } from '../records.js';
import { TeamState } from '../state/index.js';
import { createManualClock } from './manual-clock.js';

/** A small seeded generator (mulberry32), so a failing case can be replayed from its seed. */
export function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * A random but valid team history of `count` records, made by `TeamState`'s own commands
 * (refused commands are skipped): members spawned, activated, retired; tasks created, claimed,
 * completed, blocked, deleted; mail queued and delivered, with text of varying length and
 * characters JSON escapes.
 */
export function randomTeamRecords(teamId: string, count: number, seed: number): TeamRecord[] {
  const random = seeded(seed);
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)] as T;
  const state = new TeamState({ teamId, clock: createManualClock({ start: 1_767_225_600_000 }) });
  const out: TeamRecord[] = [...state.createLead({ id: teamId, agentType: 'lead', provider: 'p' })];
  let n = 0;
  const text = () =>
    `${pick(['note', 'ünïcödé ✓', 'quote " and \\\\ backslash', 'line\nbreak', 'x'.repeat(200)])} ${n}`;
  while (out.length < count) {
    n++;
    const members = state.members().filter((m) => m.phase === 'active');
    const member = pick(members);
    const tasks = state.allTasks().filter((t) => t.status !== 'deleted');
    const roll = random();
    try {
      if (roll < 0.08 && state.liveTeammateCount() < 6) {
        const id = `m${n}`;
        out.push(
          state.spawnMember(teamId, {
            id,
            name: `mate-${n}`,
            description: text(),
            agentType: 'worker',
            provider: 'p',
            context: random() < 0.5 ? 'fresh' : 'fork',
          }),
        );
        out.push(state.setMemberPhase(id, 'active'));
      } else if (roll < 0.1 && member.id !== teamId) {
        out.push(...state.releaseTasksOf(member.id));
        out.push(state.setMemberPhase(member.id, 'retired'));
      } else if (roll < 0.3) {
        const blockers = tasks.filter(() => random() < 0.1).map((t) => t.id);
        out.push(
          state.createTask(member.id, {
            subject: text(),
            description: text(),
            blockedBy: blockers,
          }),
        );
      } else if (roll < 0.5 && tasks.length > 0) {
        const task = pick(tasks);
        const action = pick([
          { type: 'claim' },
          { type: 'complete' },
          { type: 'release' },
          { type: 'edit', description: text() },
          { type: 'delete' },
          { type: 'reopen' },
        ] as const);
        out.push(state.updateTask(member.id, { taskId: task.id, action }));
      } else if (roll < 0.8) {
        const target = pick(state.members().filter((m) => m.phase === 'active'));
        if (target.id === member.id) continue;
        out.push(
          state.queueMessage({
            id: `msg-${n}`,
            senderId: member.id,
            targetId: target.id,
            kind: pick(['message', 'message', 'idle_notification', 'task_assignment']),
            delivery: random() < 0.5 ? 'wakeup' : 'quiet',
            content: [{ type: 'text', text: text() }],
          }),
        );
      } else {
        const pending = state.pendingMail();
        if (pending.length === 0) continue;
        out.push(state.markDelivered({ messageId: pick(pending).id }));
      }
    } catch (error) {
      if (!(error instanceof TeamError)) throw error;
    }
  }
  return out.slice(0, count);
}
