import { memo } from 'react';
import { type DashboardState, tokenTotals } from '../../../src/view-model.js';
import { tokenCount } from '../format.js';

/** A token count, short, with the exact figure as its tooltip. */
function Count({ n, testId }: { n: number; testId?: string }) {
  return (
    <td className="num" data-testid={testId} data-value={n} title={n.toLocaleString()}>
      {tokenCount(n)}
    </td>
  );
}

/** A string that changes whenever the token table changes. */
export function tokensKey(state: DashboardState): string {
  let key = '';
  for (const m of state.members.values()) {
    key += `${m.name}:${m.inputTokens}:${m.outputTokens}:${m.compactions}:${m.compacting};`;
  }
  return key;
}

export interface TokensTableProps {
  state: DashboardState;
  /** {@link tokensKey} of the state: the table renders again only when it changes. */
  usageKey: string;
}

/** Token use per member, as seen by this page (the hub's history and live). */
export const TokensTable = memo(function TokensTable({ state }: TokensTableProps) {
  const totals = tokenTotals(state);
  return (
    <section
      className="panel tokens-panel"
      aria-labelledby="tokens-title"
      data-testid="tokens-card"
    >
      <h2 id="tokens-title">Tokens</h2>
      <table className="tokens" data-testid="tokens-table">
        <colgroup>
          <col className="member-col" />
          <col span={3} />
          <col className="compaction-col" />
        </colgroup>
        <thead>
          <tr>
            <th scope="col">member</th>
            <th scope="col" className="num">
              input
            </th>
            <th scope="col" className="num">
              output
            </th>
            <th scope="col" className="num">
              total
            </th>
            <th
              scope="col"
              className="num"
              title="context compactions: count, last tokens before → after"
            >
              compacted
            </th>
          </tr>
        </thead>
        <tbody>
          {totals.rows.map((row) => (
            <tr key={row.name} data-testid="tokens" data-name={row.name}>
              <th scope="row" title={row.name}>
                {row.name}
              </th>
              <Count n={row.inputTokens} testId="tokens-input" />
              <Count n={row.outputTokens} testId="tokens-output" />
              <Count n={row.inputTokens + row.outputTokens} />
              <td className="num" data-testid="tokens-compactions">
                {compactionText(state, row.name)}
              </td>
            </tr>
          ))}
        </tbody>
        <tfoot>
          <tr data-testid="tokens-total">
            <th scope="row">total</th>
            <Count n={totals.inputTokens} />
            <Count n={totals.outputTokens} />
            <Count n={totals.inputTokens + totals.outputTokens} />
            <td className="num">{totals.rows.reduce((n, r) => n + r.compactions, 0)}</td>
          </tr>
        </tfoot>
      </table>
    </section>
  );
});

/** `compacting…`, or the count and the last compaction's tokens before → after. */
function compactionText(state: DashboardState, name: string): string {
  const member = [...state.members.values()].find((m) => m.name === name);
  if (member === undefined) return '';
  if (member.compacting) return 'compacting…';
  const last = member.lastCompaction;
  if (member.compactions === 0 || last === undefined) return '0';
  return `${member.compactions} (${tokenCount(last.tokensBefore)} → ${tokenCount(last.tokensAfter)})`;
}
