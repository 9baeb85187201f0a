// The tests' stand-in for the server that mounts `createMcpRoutes`: `node:http` on 127.0.0.1,
// where a request's bearer token names its member, as `@teamwire/edge` does in front of the routes
// (the edge also checks Host, Origin and body size; its own tests cover those).
import { createAdaptorServer } from '@hono/node-server';

const BEARER = /^bearer +(\S+)$/i;

/** Serves `routes` (from `createMcpRoutes`) at `/mcp` for members holding a token of `tokens`. */
export async function serveRoutes({ routes, tokens }) {
  const server = createAdaptorServer({
    fetch: async (request) => {
      const path = new URL(request.url).pathname;
      if (path !== '/mcp') return new Response('not found', { status: 404 });
      const token = BEARER.exec(request.headers.get('authorization') ?? '')?.[1];
      const member = token === undefined ? undefined : tokens.memberOf(token);
      if (member === undefined) {
        return new Response(
          JSON.stringify({
            jsonrpc: '2.0',
            error: { code: -32001, message: 'UNAUTHORIZED', data: { code: 'UNAUTHORIZED' } },
            id: null,
          }),
          { status: 401, headers: { 'content-type': 'application/json' } },
        );
      }
      return routes.fetch(request, member);
    },
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address();
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    sessionCount: () => routes.sessionCount(),
    async close() {
      routes.close();
      server.closeAllConnections();
      await new Promise((resolve) => server.close(() => resolve()));
    },
  };
}
