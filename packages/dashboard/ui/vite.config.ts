import { fileURLToPath } from 'node:url';
import react from '@vitejs/plugin-react';
import { defineConfig } from 'vite';
import { precompress } from './precompress.js';

/*
 * The dashboard page, built to ../dist/ui as one index.html, one script and one stylesheet, each
 * asset named by a hash of its content and compressed next to it (see precompress.ts). The page
 * loads nothing that index.html does not name: no lazy chunks, no preloads.
 */
const uiDir = fileURLToPath(new URL('.', import.meta.url));

/*
 * The page takes core's rules (task readiness, the backoff, limits) from core's source, not from
 * its built bundle: core declares itself free of side effects, so only the modules the page uses
 * are bundled (a few pure functions, no Node built-ins, no schemas).
 */
const coreSource = fileURLToPath(new URL('../../core/src/index.ts', import.meta.url));

export default defineConfig({
  root: uiDir,
  base: './',
  publicDir: false,
  resolve: { alias: [{ find: /^@teamwire\/core$/, replacement: coreSource }] },
  plugins: [react(), precompress()],
  build: {
    outDir: fileURLToPath(new URL('../dist/ui', import.meta.url)),
    emptyOutDir: true,
    sourcemap: false,
    cssCodeSplit: false,
    modulePreload: false,
    // Everything the page uses is in its script or stylesheet, never a separate file.
    assetsInlineLimit: Number.POSITIVE_INFINITY,
    target: 'es2022',
    rolldownOptions: {
      output: {
        codeSplitting: false,
        // the hash is what lets the server tell browsers to keep a file for a year
        entryFileNames: 'assets/[name]-[hash].js',
        assetFileNames: 'assets/[name]-[hash][extname]',
      },
    },
  },
});
