/*
 * What the page's build leaves for the server, besides the files: shared by the build's
 * precompress step (ui/precompress.ts) and the server (assets.ts), and free of imports, so the
 * build loads nothing else.
 */

/**
 * The build's list of content-hashed assets, in the page's folder: `{files: {<name>: [encoding,
 * …]}}`, each file with the encodings it was compressed to.
 */
export const ASSETS_MANIFEST = 'assets.json';

/** The file a compressed variant is stored in, by encoding: `<name>.br`, `<name>.gz`. */
export const ENCODING_SUFFIX = { br: '.br', gzip: '.gz' } as const;

/** An encoding a variant is compressed with. */
export type AssetEncoding = keyof typeof ENCODING_SUFFIX;
