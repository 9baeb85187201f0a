import { describe, expect, it } from 'vitest';
import { formatTeamContext } from './texts.js';

describe('formatTeamContext', () => {
  it('names the agent, the lead, the role and the other teammates', () => {
    const text = formatTeamContext({
      agentName: 'alice',
      leadName: 'lead',
      description: 'Writes the parser.',
      teammates: ['alice', 'bob', 'carol'],
      mailFormat: 'MAIL FORMAT',
    });
    expect(text.split('\n').slice(0, 3)).toEqual([
      'You are alice, a teammate in an agent team led by lead.',
      'Your role: Writes the parser.',
      'Your teammates: bob, carol.',
    ]);
    expect(text.endsWith('Team mail format:\nMAIL FORMAT')).toBe(true);
  });

  it('says so when there are no other teammates', () => {
    const text = formatTeamContext({
      agentName: 'alice',
      leadName: 'lead',
      description: ' ',
      teammates: [],
      mailFormat: '',
    });
    expect(text).toContain('You have no other teammates yet.');
    expect(text).not.toContain('Your role:');
  });
});
