import type { McpRoutes, TokenIssuer } from '../src/index.js';

export interface ServedRoutes {
  url: string;
  sessionCount(): number;
  close(): Promise<void>;
}
export declare function serveRoutes(options: {
  routes: Pick<McpRoutes, 'fetch' | 'sessionCount' | 'close'>;
  tokens: Pick<TokenIssuer, 'memberOf'>;
}): Promise<ServedRoutes>;
