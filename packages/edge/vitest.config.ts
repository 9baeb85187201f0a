import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['src/**/*.test.ts'],
    // End-to-end tests start server processes and connect real MCP clients to them.
    testTimeout: 60_000,
    hookTimeout: 60_000,
  },
});
