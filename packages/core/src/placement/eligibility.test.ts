import { describe, expect, it } from 'vitest';
import { TeamError } from '../errors.js';
import { PLACEMENT_CAPABILITIES_MAX, PLACEMENT_CAPABILITY_MAX_BYTES } from '../limits.js';
import type { PlacementCandidate } from '../ports/placement.js';
import { createAgentRegistry } from '../runtime/agents.js';
import { createScriptedModel } from '../testing/scripted-model.js';
import {
  canHost,
  checkCapabilities,
  missingCapabilities,
  type PlacementHost,
  unmetRequirements,
} from './eligibility.js';

const host = (capabilities: string[], agentTypes: string[] | 'all' = 'all'): PlacementHost => ({
  lead: false,
  agentTypes,
  capabilities,
});
const fixer: PlacementCandidate = {
  memberId: 'm1',
  agentType: 'fixer',
  isLead: false,
  requires: ['repo:app', 'credential:anthropic'],
};

function codeOf(run: () => unknown): string | undefined {
  try {
    run();
  } catch (error) {
    return TeamError.isInstance(error) ? error.code : 'not a TeamError';
  }
  return undefined;
}

describe('placement eligibility', () => {
  it('hosts a candidate only where every required capability is', () => {
    expect(canHost(host(['repo:app', 'credential:anthropic', 'label:gpu']), fixer)).toBe(true);
    expect(canHost(host(['repo:app']), fixer)).toBe(false);
    expect(missingCapabilities(host(['repo:app']), fixer)).toEqual(['credential:anthropic']);
    expect(canHost(host([]), { ...fixer, requires: [] })).toBe(true);
  });

  it('still needs the process to be willing by role and type', () => {
    const all = ['repo:app', 'credential:anthropic'];
    expect(canHost(host(all, ['reviewer']), fixer)).toBe(false);
    expect(canHost(host(all, ['fixer']), fixer)).toBe(true);
    expect(canHost(host(all), { ...fixer, isLead: true })).toBe(false);
    expect(canHost({ ...host(all), lead: true }, { ...fixer, isLead: true })).toBe(true);
  });

  it('says what a candidate no willing process can host waits for', () => {
    const hosts = [host(['repo:app']), host(['credential:anthropic', 'label:gpu'])];
    expect(unmetRequirements(hosts, fixer)).toEqual(['repo:app', 'credential:anthropic']);
    // one capable host: nothing is unmet
    expect(unmetRequirements([...hosts, host(fixer.requires as string[])], fixer)).toEqual([]);
    // no willing host at all is not a capability problem
    expect(unmetRequirements([host(['repo:app'], ['reviewer'])], fixer)).toEqual([]);
  });

  it('refuses malformed or unbounded capability lists with INVALID_ARGUMENT', () => {
    expect(checkCapabilities(['repo:app', 'label:gpu', 'repo:app'], 'runs')).toEqual([
      'repo:app',
      'label:gpu',
    ]);
    for (const bad of [
      'repo:app',
      [''],
      ['gpu'],
      ['Repo:app'],
      ['repo:has space'],
      ['repo:app\u0000'],
      [42],
      [`repo:${'a'.repeat(PLACEMENT_CAPABILITY_MAX_BYTES)}`],
      Array.from({ length: PLACEMENT_CAPABILITIES_MAX + 1 }, (_, i) => `label:l${i}`),
    ]) {
      expect(codeOf(() => checkCapabilities(bad, 'runs.capabilities'))).toBe('INVALID_ARGUMENT');
    }
  });
});

describe('agent type placement requirements', () => {
  const base = { systemPrompt: 'x', model: createScriptedModel() };

  it('accepts a type that requires capabilities', () => {
    const registry = createAgentRegistry([
      { ...base, type: 'fixer', placement: { requires: ['repo:app'] } },
    ]);
    expect(registry.model('fixer').placement?.requires).toEqual(['repo:app']);
  });

  it('refuses bad requirements when the registry is built', () => {
    for (const placement of [
      { requires: ['no-colon'] },
      { requires: 'repo:app' },
      [],
      { requires: Array.from({ length: PLACEMENT_CAPABILITIES_MAX + 1 }, (_, i) => `label:x${i}`) },
    ]) {
      expect(
        codeOf(() =>
          createAgentRegistry([
            // biome-ignore lint/suspicious/noExplicitAny: malformed input on purpose
            { ...base, type: 'fixer', placement: placement as any },
          ]),
        ),
      ).toBe('INVALID_ARGUMENT');
    }
  });
});
