import type {
  LanguageModelV2,
  LanguageModelV2CallOptions,
  LanguageModelV2StreamPart,
} from '@ai-sdk/provider';

/** What one `doStream` call of a {@link scriptedModel} does. */
export type ModelScript =
  | LanguageModelV2StreamPart[]
  | { reject: unknown }
  | { hang: LanguageModelV2StreamPart[] };

/** A hand-written LanguageModelV2 that replays scripted stream parts and records its calls. */
export function scriptedModel(scripts: ModelScript[]) {
  const calls: LanguageModelV2CallOptions[] = [];
  const cancelled: unknown[] = [];
  const model: LanguageModelV2 = {
    specificationVersion: 'v2',
    provider: 'scripted.chat',
    modelId: 'scripted-1',
    supportedUrls: {},
    doGenerate: () => Promise.reject(new Error('not used')),
    async doStream(options) {
      calls.push(options);
      const script = scripts.shift();
      if (script === undefined) throw new Error('no script left');
      if ('reject' in script) throw script.reject;
      const parts = Array.isArray(script) ? script : script.hang;
      const hang = !Array.isArray(script);
      return {
        stream: new ReadableStream<LanguageModelV2StreamPart>({
          start(controller) {
            for (const part of parts) controller.enqueue(part);
            if (!hang) controller.close();
          },
          cancel(reason) {
            cancelled.push(reason);
          },
        }),
      };
    },
  };
  return { model, calls, cancelled };
}
