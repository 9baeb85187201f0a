import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['src/**/*.test.ts'],
    // Browser tests start Chromium and a team; a loaded machine needs more than 5 s.
    testTimeout: 90_000,
    hookTimeout: 90_000,
  },
});
