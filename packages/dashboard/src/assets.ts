import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { z } from 'zod';
import { ASSETS_MANIFEST, type AssetEncoding, ENCODING_SUFFIX } from './asset-manifest.js';
import { COMMON_HEADERS } from './http.js';

/**
 * The page's script and stylesheet. The build names each `<name>-<hash>.<ext>`, the hash being
 * of its content, compresses it (`.br`, `.gz`) and lists it in `assets.json`: a listed file never
 * changes under its name, so browsers may keep it for a year, and it is never compressed at
 * request time. Any other file of the folder is sent as it is, and not kept.
 */

const Manifest = z.object({
  files: z.record(z.string(), z.array(z.enum(Object.keys(ENCODING_SUFFIX) as [AssetEncoding]))),
});

const CONTENT_TYPES: Record<string, string> = {
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
};

/** A year: what `immutable` files are kept for. */
const IMMUTABLE = 'public, max-age=31536000, immutable';

interface Asset {
  type: string;
  immutable: boolean;
  bodies: Partial<Record<AssetEncoding | 'identity', Buffer>>;
}

/** Finds `<dir>/assets/<name>` in the variant `accept` (an `Accept-Encoding`) takes. */
export function createAssetLookup(
  dir: string,
): (name: string, accept: string | undefined) => Promise<FoundAsset | undefined> {
  // A listed file is read (with its variants) once: the cache holds at most the folder's listed
  // files, since nothing else is kept.
  const cache = new Map<string, Promise<Asset | undefined>>();

  const loadManifest = async () => {
    try {
      const parsed = Manifest.safeParse(
        JSON.parse(await readFile(path.join(dir, ASSETS_MANIFEST), 'utf8')),
      );
      return parsed.success ? parsed.data.files : {};
    } catch {
      return {}; // a folder without the build's list: nothing is immutable or compressed
    }
  };

  const load = async (name: string): Promise<Asset | undefined> => {
    const type = CONTENT_TYPES[path.extname(name)];
    if (type === undefined) return undefined;
    const file = path.join(dir, 'assets', name);
    let identity: Buffer;
    try {
      identity = await readFile(file);
    } catch {
      return undefined;
    }
    const manifest = await loadManifest();
    const encodings = Object.hasOwn(manifest, name) ? manifest[name] : undefined;
    const asset: Asset = { type, immutable: encodings !== undefined, bodies: { identity } };
    for (const encoding of encodings ?? []) {
      try {
        asset.bodies[encoding] = await readFile(file + ENCODING_SUFFIX[encoding]);
      } catch {
        // listed but absent: that encoding is not offered
      }
    }
    return asset;
  };

  return lookup;

  async function lookup(name: string, accept: string | undefined): Promise<FoundAsset | undefined> {
    let pending = cache.get(name);
    if (pending === undefined) {
      pending = load(name);
      cache.set(name, pending);
    }
    const asset = await pending;
    if (asset?.immutable !== true) cache.delete(name);
    if (asset === undefined) return undefined;
    const encoding = chooseEncoding(accept, asset.bodies);
    const body = asset.bodies[encoding] as Buffer;
    return {
      body,
      headers: {
        ...COMMON_HEADERS,
        'content-type': asset.type,
        'content-length': String(body.length),
        'cache-control': asset.immutable ? IMMUTABLE : 'no-store',
        vary: 'accept-encoding',
        ...(encoding === 'identity' ? {} : { 'content-encoding': encoding }),
      },
    };
  }
}

/** An asset found: the variant chosen for the request, and the headers to send it with. */
export interface FoundAsset {
  body: Buffer;
  headers: Record<string, string>;
}

/**
 * The encoding to answer with: brotli, else gzip, when the request accepts it (`Accept-Encoding`,
 * q-values and `*` included) and a variant exists, else the file as it is.
 */
export function chooseEncoding(
  accept: string | undefined,
  available: Partial<Record<AssetEncoding | 'identity', Buffer>>,
): AssetEncoding | 'identity' {
  const weights = new Map<string, number>();
  for (const part of (accept ?? '').split(',')) {
    const [coding = '', ...params] = part.split(';').map((s) => s.trim().toLowerCase());
    if (coding === '') continue;
    const q = params.find((p) => p.startsWith('q='));
    const weight = q === undefined ? 1 : Number(q.slice(2));
    weights.set(coding, Number.isFinite(weight) ? weight : 0);
  }
  const accepted = (coding: string) => (weights.get(coding) ?? weights.get('*') ?? 0) > 0;
  for (const encoding of ['br', 'gzip'] as const) {
    if (available[encoding] !== undefined && accepted(encoding)) return encoding;
  }
  return 'identity';
}
