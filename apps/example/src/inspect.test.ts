import path from 'node:path';
import { TeamState, textContent } from '@teamwire/core';
import { openJsonlTeamStore } from '@teamwire/storage';
import { describe, expect, it } from 'vitest';
import { inspectTeam } from './inspect.js';
import { tempDir } from './test-support.js';

describe('inspect', () => {
  it('lists the mail that ended without delivery, with who sent it to whom and why', async () => {
    const work = tempDir('inspect-dead');
    const teamId = 'TEAM0000000000000000000001';
    const store = await openJsonlTeamStore({
      teamId,
      dir: path.join(work, '.teamwire', 'teams', teamId),
    });
    const state = new TeamState({ teamId });
    const records = [
      ...state.createLead({ id: teamId, agentType: 'lead', provider: 'scripted:scripted-1' }),
      state.spawnMember(teamId, {
        id: 'm-fixer',
        name: 'fixer-9',
        description: 'fixes',
        agentType: 'fixer',
        provider: 'scripted:scripted-1',
        context: 'fresh',
      }),
      state.queueMessage({
        id: 'prompt-9',
        senderId: teamId,
        targetId: 'm-fixer',
        kind: 'message',
        delivery: 'wakeup',
        content: textContent('Fix folder gamma.'),
        summary: 'fix gamma',
      }),
      ...state.leave('m-fixer', 'failed', 'MEMBER_LIMIT'),
    ];
    await store.log.append({ records });
    await store.close();
    const { text } = await inspectTeam(
      { command: 'inspect', teamId, stateDir: '.teamwire', verify: false },
      { cwd: work },
    );
    expect(text).toContain('Pending mail: 0');
    expect(text).toContain('Dead letters: 1');
    expect(text).toContain(
      '  lead -> fixer-9: fix gamma  TARGET_FAILED (fixer-9 failed: MEMBER_LIMIT)',
    );
  });
});
