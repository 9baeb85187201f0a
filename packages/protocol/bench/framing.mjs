// Framing overhead per message for each format: the bytes a format adds to the text it carries,
// paid on every delivered message. Not a test; run `pnpm build && pnpm bench` in this package.
import {
  formatAssignmentNotice,
  jsonFormat,
  measureFraming,
  toolCallFormat,
  xmlFormat,
} from '../dist/index.js';

const formats = [xmlFormat, jsonFormat, toolCallFormat];

const task = {
  id: 'task-12',
  revision: 1,
  subject: 'Add retries to the HTTP client',
  description: 'Retry 429 and 5xx with jittered backoff; cap at five attempts.',
  status: 'pending',
  creatorId: 'id-lead',
  blockedBy: [],
  writeScopes: ['src/http/'],
};

const code = [
  'export function clamp<T extends number>(value: T, min: T, max: T): T {',
  '  return value < min ? min : value > max ? max : value; // a < b && b > c',
  '}',
  'const html = "<div class=\\"x\\">&nbsp;</div>";',
].join('\n');

const paragraph =
  'I looked at the failing test: the fixture writes the log with CRLF line endings, and the ' +
  'reader splits on "\\n" only, so the last field keeps a trailing "\\r". I changed the reader to ' +
  'accept both and added a test with a CRLF fixture. The PR is up for review.';

const samples = [
  ['message: "ok"', 'message', 'alice', 'ok', undefined],
  ['message: paragraph (+summary)', 'message', 'alice', paragraph, 'CRLF fix is up'],
  ['message: TypeScript snippet', 'message', 'alice', code, undefined],
  [
    'message: markup-heavy (escaping)',
    'message',
    'alice',
    '</teammate-message>&lt;'.repeat(20),
    undefined,
  ],
  [
    'message: 4 KiB prose',
    'message',
    'alice',
    'lorem ipsum '.repeat(342).slice(0, 4096),
    undefined,
  ],
  [
    'task_assignment',
    'task_assignment',
    'lead',
    formatAssignmentNotice({ task, assignedBy: 'lead' }),
    undefined,
  ],
  [
    'idle_notification: with text',
    'idle_notification',
    'alice',
    'PR is up; waiting for review.',
    undefined,
  ],
  ['idle_notification: no text', 'idle_notification', 'alice', '', undefined],
  ['shutdown_request', 'shutdown_request', 'lead', 'All tasks are done.', undefined],
];

function queued(kind, from, text, summary) {
  const message = {
    id: '01JZ3Q8N6V0000000000000000',
    senderId: `id-${from}`,
    senderName: from,
    targetId: 'id-target',
    kind,
    delivery: 'wakeup',
    content: text === '' ? [] : [{ type: 'text', text }],
  };
  if (summary !== undefined) message.summary = summary;
  return message;
}

const rows = samples.map(([label, kind, from, text, summary]) => {
  const message = queued(kind, from, text, summary);
  const costs = formats.map((format) =>
    measureFraming(format, { message, sender: { name: from, color: 'blue' } }),
  );
  return [label, String(costs[0].textBytes), ...costs.map((c) => `+${c.overheadBytes}`)];
});

const mean = formats.map(
  (_, i) => rows.reduce((sum, row) => sum + Number(row[2 + i].slice(1)), 0) / rows.length,
);
const footer = ['mean', '', ...mean.map((m) => `+${m.toFixed(1)}`)];

const header = ['sample', 'text bytes', ...formats.map((p) => p.name)];
const widths = header.map((h, i) =>
  Math.max(h.length, ...[...rows, footer].map((r) => r[i].length)),
);
const line = (cells) =>
  cells.map((cell, i) => (i === 0 ? cell.padEnd(widths[i]) : cell.padStart(widths[i]))).join('  ');

console.log('Framing overhead in UTF-8 bytes per message (about 4 bytes per token).');
console.log('Counted: text of every entry, plus tool-call id, name and arguments and tool-result');
console.log('call ids; role scaffolding and chat templates are extra and provider-specific');
console.log('(the tool-call format pays them for two entries per message).\n');
console.log(line(header));
console.log(line(widths.map((w) => '-'.repeat(w))));
for (const row of rows) console.log(line(row));
console.log(line(footer));
