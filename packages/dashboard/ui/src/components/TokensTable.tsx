import { memo } from 'react';
import { type DashboardState, tokenTotals } from '../../../src/view-model.js';

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
    <section className="panel tokens-panel" aria-labelledby="tokens-title">
      <h2 id="tokens-title">Tokens</h2>
      <table className="tokens">
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
              <th scope="row">{row.name}</th>
              <td className="num" data-testid="tokens-input">
                {row.inputTokens}
              </td>
              <td className="num" data-testid="tokens-output">
                {row.outputTokens}
              </td>
              <td className="num">{row.inputTokens + row.outputTokens}</td>
              <td className="num" data-testid="tokens-compactions">
                {compactionText(state, row.name)}
              </td>
            </tr>
          ))}
        </tbody>
        <tfoot>
          <tr data-testid="tokens-total">
            <th scope="row">total</th>
            <td className="num">{totals.inputTokens}</td>
            <td className="num">{totals.outputTokens}</td>
            <td className="num">{totals.inputTokens + totals.outputTokens}</td>
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
  return `${member.compactions} (${last.tokensBefore} → ${last.tokensAfter})`;
}
