import {
  CONTEXT_WINDOW_MAX,
  CONTEXT_WINDOW_MIN,
  type ContextBudget,
  deterministicSummary,
  modelSummary,
} from '@teamwire/core';
import { parseModelSpec } from '@teamwire/host-adapters';

/*
 * The context budgets of the example's members: how large a window each model has, and who
 * summarises a member's older conversation when it passes 75% of it (core's default share).
 */

/** The window of a `--model` whose provider this table does not know, in tokens. */
export const DEFAULT_CONTEXT_WINDOW = 128_000;

/**
 * The window assumed for each `--model` provider when `--context-window` is not given: a
 * conservative one for the provider's current models (many have more). A local server's window is
 * the one it was started with (Ollama: `OLLAMA_CONTEXT_LENGTH` or `num_ctx`); say it with
 * `--context-window`. A window set too large is caught by the provider: core compacts once when a
 * request is refused as too long, and retries it.
 */
export const PROVIDER_CONTEXT_WINDOWS: Readonly<Record<string, number>> = {
  anthropic: 200_000,
  openai: 128_000,
  openrouter: 128_000,
  groq: 128_000,
  deepseek: 128_000,
  mistral: 128_000,
  xai: 128_000,
  ollama: 32_768,
  llamacpp: 32_768,
  vllm: 32_768,
  'openai-compatible': 32_768,
};

/**
 * The window the offline policy model's reviewers run on unless `--context-window` says
 * otherwise. The policy model has no window of its own: this one is small enough that a reviewer
 * compacts its context while it reviews a real repository, so the demo shows it (measured on this
 * repository: the requests of each of the 3 reviewers grow to 21-28k tokens over its tasks, past
 * the budget of 18000, 75% of this window), and large enough for the reads of almost any folder.
 */
export const OFFLINE_CONTEXT_WINDOW = 24_000;

/** The settings that decide a team's budgets (kept in its settings file). */
export interface ContextSettings {
  /** `--model`; absent: the offline policy model. */
  model?: string | undefined;
  /** `--context-window`; absent: the provider's (or the offline) default. */
  contextWindow?: number | undefined;
}

/** What `--context-window` (and a settings file's `contextWindow`) accepts, for messages. */
export const CONTEXT_WINDOW_RANGE = { min: CONTEXT_WINDOW_MIN, max: CONTEXT_WINDOW_MAX };

/** The window of a team's model, in tokens: `--context-window`, else the default for its model. */
export function contextWindowOf(settings: ContextSettings): number {
  if (settings.contextWindow !== undefined) return settings.contextWindow;
  if (!settings.model) return OFFLINE_CONTEXT_WINDOW;
  let provider: string;
  try {
    provider = parseModelSpec(settings.model).provider;
  } catch {
    // a bad spec is refused, with its reason, when the model is created
    return DEFAULT_CONTEXT_WINDOW;
  }
  return PROVIDER_CONTEXT_WINDOWS[provider] ?? DEFAULT_CONTEXT_WINDOW;
}

/**
 * The budget of a model-run member. On a real model every member has one, and its own model
 * writes the summary (`modelSummary`). On the offline policy model only a member whose policy
 * reads nothing but its current task (`offline: 'summarise'`: a reviewer) gets one, summarised by
 * `deterministicSummary` with no model; the others keep their whole conversation (`'keep'`): an
 * offline lead reads every teammate's findings back from it, which a deterministic summary drops.
 */
export function contextBudget(
  settings: ContextSettings,
  offline: 'summarise' | 'keep',
): ContextBudget | undefined {
  if (settings.model) {
    return { windowTokens: contextWindowOf(settings), policy: modelSummary() };
  }
  if (offline === 'keep') return undefined;
  return { windowTokens: contextWindowOf(settings), policy: deterministicSummary() };
}

/** An agent definition's `context` field, left out when there is no budget. */
export function withContext(budget: ContextBudget | undefined): { context?: ContextBudget } {
  return budget === undefined ? {} : { context: budget };
}
