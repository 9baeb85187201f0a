import { TeamError } from '@teamwire/core';
import { describe, expect, it } from 'vitest';
import { reportTool, reviewTeamSetup, type TeamSettings } from './app.js';
import {
  contextBudget,
  contextWindowOf,
  DEFAULT_CONTEXT_WINDOW,
  OFFLINE_CONTEXT_WINDOW,
} from './context-window.js';
import { tempDir } from './test-support.js';

describe('the context window of a team', () => {
  it('defaults by the provider of --model, and to the offline window without one', () => {
    expect(contextWindowOf({})).toBe(OFFLINE_CONTEXT_WINDOW);
    expect(OFFLINE_CONTEXT_WINDOW).toBe(24_000);
    expect(contextWindowOf({ model: 'anthropic:claude-sonnet-4-5' })).toBe(200_000);
    expect(contextWindowOf({ model: 'openai:gpt-4.1-mini' })).toBe(128_000);
    expect(contextWindowOf({ model: 'ollama:qwen3:8b' })).toBe(32_768);
    expect(contextWindowOf({ model: 'openai-compatible:m@http://127.0.0.1:8080/v1' })).toBe(32_768);
    // a spec createModel refuses is refused there, with its reason
    expect(contextWindowOf({ model: 'nonsense' })).toBe(DEFAULT_CONTEXT_WINDOW);
  });

  it('is --context-window when given, on any model', () => {
    expect(contextWindowOf({ contextWindow: 8000 })).toBe(8000);
    expect(
      contextWindowOf({ model: 'anthropic:claude-sonnet-4-5', contextWindow: 1_000_000 }),
    ).toBe(1_000_000);
  });

  it('is summarised by the model itself on a real model, by no model offline', () => {
    const real = { model: 'openai:gpt-4.1-mini' };
    expect(contextBudget(real, 'keep')).toMatchObject({
      windowTokens: 128_000,
      policy: { name: 'model' },
    });
    expect(contextBudget(real, 'summarise')).toMatchObject({ policy: { name: 'model' } });
    expect(contextBudget({}, 'summarise')).toMatchObject({
      windowTokens: OFFLINE_CONTEXT_WINDOW,
      policy: { name: 'deterministic' },
    });
    // the offline lead reads its teammates' findings back from its whole conversation
    expect(contextBudget({}, 'keep')).toBeUndefined();
  });
});

describe('the agents of a review team', () => {
  const settings = (extra: Partial<TeamSettings>): TeamSettings => ({
    version: 1,
    dir: tempDir('window'),
    teammates: 2,
    protocol: 'xml',
    report: 'r.md',
    ...extra,
  });
  const setup = (extra: Partial<TeamSettings>) =>
    reviewTeamSetup(settings(extra), {
      cwd: '/',
      paceMs: 0,
      report: reportTool('r.md', () => {}),
    });

  it('give the reviewers a budget, and on a real model the lead too', () => {
    const offline = setup({ contextWindow: 5000 }).agents;
    expect(offline.get('reviewer')).toMatchObject({
      context: { windowTokens: 5000, policy: { name: 'deterministic' } },
    });
    expect(offline.get('lead')).not.toHaveProperty('context');
    // a local server: no API key needed to build the team
    const local = setup({ model: 'ollama:qwen3:8b' }).agents;
    expect(local.get('lead')).toMatchObject({ context: { windowTokens: 32_768 } });
    const real = setup({
      model: 'openai-compatible:m@http://127.0.0.1:9/v1',
      contextWindow: 150_000,
    }).agents;
    for (const type of ['lead', 'reviewer']) {
      expect(real.get(type)).toMatchObject({
        context: { windowTokens: 150_000, policy: { name: 'model' } },
      });
    }
  });

  it('refuses a window core cannot keep, naming the field', () => {
    let error: unknown;
    try {
      setup({ contextWindow: 100 });
    } catch (caught) {
      error = caught;
    }
    expect(TeamError.isInstance(error)).toBe(true);
    expect(error).toMatchObject({
      code: 'INVALID_ARGUMENT',
      details: { field: 'context.windowTokens' },
    });
  });
});
