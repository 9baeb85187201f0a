import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { brotliCompressSync, constants, gzipSync } from 'node:zlib';
import type { Plugin } from 'vite';
import { ASSETS_MANIFEST, type AssetEncoding, ENCODING_SUFFIX } from '../src/asset-manifest.js';

/**
 * Compresses the page's assets once, at build time (brotli at its best quality, gzip at level 9;
 * too slow for a request, free here), next to each file, and lists them in the manifest the
 * server reads: every file the bundle wrote under `assets/`, all named `<name>-<hash>` by this
 * build's config, so a listed file never changes under its name.
 */
export function precompress(): Plugin {
  return {
    name: 'teamwire-precompress',
    apply: 'build',
    async writeBundle(options, bundle) {
      const outDir = options.dir as string;
      const files: Record<string, AssetEncoding[]> = {};
      for (const fileName of Object.keys(bundle).sort()) {
        if (!fileName.startsWith('assets/')) continue;
        const file = path.join(outDir, fileName);
        const source = await readFile(file);
        const variants = {
          br: brotliCompressSync(source, {
            params: {
              [constants.BROTLI_PARAM_QUALITY]: constants.BROTLI_MAX_QUALITY,
              [constants.BROTLI_PARAM_SIZE_HINT]: source.length,
            },
          }),
          gzip: gzipSync(source, { level: 9 }),
        };
        const encodings: AssetEncoding[] = [];
        for (const encoding of ['br', 'gzip'] as const) {
          // a variant no smaller than the file is not worth a choice
          if (variants[encoding].length >= source.length) continue;
          await writeFile(file + ENCODING_SUFFIX[encoding], variants[encoding]);
          encodings.push(encoding);
        }
        files[fileName.slice('assets/'.length)] = encodings;
      }
      await writeFile(
        path.join(outDir, ASSETS_MANIFEST),
        `${JSON.stringify({ files }, null, 2)}\n`,
      );
    },
  };
}
