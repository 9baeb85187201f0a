import { chmod, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { ExternalAgentDefinition, TeamService } from '@teamwire/core';
import { clientConfig, generateSecret } from '@teamwire/mcp';

/*
 * `--mcp`: the review team gets a member run by an MCP client (a coding agent such as Claude Code
 * or Cursor), served over Streamable HTTP on 127.0.0.1 next to the built-in reviewers, by the
 * run's edge (web-serve.ts). The run prints the client configuration, and keeps serving after the
 * review until Ctrl-C.
 */

/** The agent type of members run by an MCP client. */
export const CODING_AGENT_TYPE = 'coding-agent';
/** The external member the review team gets with `--mcp`. */
export const CODER_NAME = 'coder';
/** The file in a team folder that keeps the token secret, so tokens survive `--resume`. */
const SECRET_FILE = 'mcp-secret';
/** Environment variable that sets the token secret (e.g. for a team kept in PostgreSQL). */
export const MCP_SECRET_ENV = 'TEAMWIRE_MCP_SECRET';

export const CODING_AGENT: ExternalAgentDefinition = {
  type: CODING_AGENT_TYPE,
  description:
    'A coding agent that joins over MCP (Claude Code, Cursor, ...): it runs in its client.',
  external: true,
};

const CODER_PROMPT =
  'You joined a code-review team through MCP. Read your inbox (read_inbox), claim a ready review ' +
  'task (task_update with action claim), review that folder, send your findings to the lead with ' +
  'send_message, then complete the task. Acknowledge your mail as you handle it.';

/**
 * The secret that signs the members' tokens: `TEAMWIRE_MCP_SECRET`, else the one kept in the team
 * folder (created, readable by this user only, on first use), else a new one for this run.
 */
export async function mcpSecret(options: {
  env: NodeJS.ProcessEnv;
  teamDir?: string | undefined;
}): Promise<string> {
  const fromEnv = options.env[MCP_SECRET_ENV];
  if (fromEnv !== undefined && fromEnv !== '') return fromEnv;
  if (options.teamDir === undefined) return generateSecret();
  const file = path.join(options.teamDir, SECRET_FILE);
  try {
    const kept = (await readFile(file, 'utf8')).trim();
    if (kept !== '') return kept;
  } catch {
    // not kept yet
  }
  const secret = generateSecret();
  await writeFile(file, `${secret}\n`, { mode: 0o600 });
  await chmod(file, 0o600);
  return secret;
}

/** The lines that tell a person how to connect Claude Code or Cursor as `member`. */
export function configLines(options: { url: string; token: string; member: string }): string[] {
  const config = clientConfig({
    name: `teamwire-${options.member}`,
    url: options.url,
    token: options.token,
  });
  return [
    `MCP: ${options.member} can join the team at ${options.url} (bearer token below; keep it private)`,
    `  Claude Code:  ${config.claudeCode}`,
    `  Cursor (.cursor/mcp.json): ${JSON.stringify(config.cursor)}`,
  ];
}

/** Spawns the `coder` member, unless the team has it already (a resumed run). */
export async function spawnCoder(team: TeamService): Promise<void> {
  const known = team.listMembers(team.lead).some((m) => m.name === CODER_NAME);
  if (known) return;
  await team.spawnTeammate(team.lead, {
    name: CODER_NAME,
    description: 'A coding agent joining over MCP',
    prompt: CODER_PROMPT,
    agentType: CODING_AGENT_TYPE,
  });
}
