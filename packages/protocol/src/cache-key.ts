import { TeamError } from '@teamwire/core';

/**
 * The prompt-cache routing key of one agent's conversation: `<sessionId>:<agentName>`, plus
 * `#<spawn>` when a spawn sequence number is given. Providers that route by key (OpenAI's
 * `prompt_cache_key`) then keep each agent's growing prefix on one cache, instead of every
 * teammate of a team evicting the others; a new spawn with a fresh context gets its own key.
 *
 * The agent name may not contain `:` or `#`, so a key always splits back into its parts.
 */
export function promptCacheKey(sessionId: string, agentName: string, spawn?: number): string {
  if (sessionId === '') {
    throw new TeamError('INVALID_ARGUMENT', 'promptCacheKey needs a non-empty session id');
  }
  if (agentName === '' || /[:#]/.test(agentName)) {
    throw new TeamError(
      'INVALID_ARGUMENT',
      `promptCacheKey needs an agent name without ':' or '#' (got ${JSON.stringify(agentName)})`,
    );
  }
  if (spawn === undefined) return `${sessionId}:${agentName}`;
  if (!Number.isSafeInteger(spawn) || spawn < 1) {
    throw new TeamError(
      'INVALID_ARGUMENT',
      `promptCacheKey spawn must be a positive integer (got ${spawn})`,
    );
  }
  return `${sessionId}:${agentName}#${spawn}`;
}
