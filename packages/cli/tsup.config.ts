import { defineConfig } from 'tsup';

export default defineConfig({
  // `cli.ts` is the `teamwire` bin (its `#!/usr/bin/env node` line is kept by the bundler).
  entry: ['src/index.ts', 'src/cli.ts'],
  format: ['esm'],
  dts: { entry: 'src/index.ts' },
  sourcemap: true,
  clean: true,
  target: 'node20',
});
