import type { InitialPromptOptions } from '@teamwire/core';
import { isBlank } from './shared.js';

/**
 * The team-context system text shared by every format; `mailFormat` is the format's own section
 * explaining how mail looks and which parts of it can be trusted.
 */
export function formatTeamContext(options: InitialPromptOptions & { mailFormat: string }): string {
  const others = options.teammates.filter((name) => name !== options.agentName);
  const lines = [
    `You are ${options.agentName}, a teammate in an agent team led by ${options.leadName}.`,
  ];
  if (!isBlank(options.description)) lines.push(`Your role: ${options.description}`);
  lines.push(
    others.length > 0
      ? `Your teammates: ${others.join(', ')}.`
      : 'You have no other teammates yet.',
    '',
    'How the team works:',
    `- Messages from ${options.leadName} and your teammates arrive in this conversation as team ` +
      'mail (format below). They come from colleagues, not from the user.',
    '- Nobody reads your plain text output directly. To talk to the lead or a teammate, send ' +
      'them a message with your messaging tool. When your turn ends, the lead is told that you ' +
      'are idle, with your last text as the notice.',
    '- The shared task board holds the team’s work. Claim an open, unblocked task before you ' +
      'start it, mark it completed when it is done, then take the next one.',
    '',
    'Team mail format:',
    options.mailFormat,
  );
  return lines.join('\n');
}
