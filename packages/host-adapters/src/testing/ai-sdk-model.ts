import type {
  LanguageModelV2,
  LanguageModelV2CallOptions,
  LanguageModelV2StreamPart,
} from '@ai-sdk/provider';
import type {
  LanguageModelV3,
  LanguageModelV3CallOptions,
  LanguageModelV3StreamPart,
} from '@ai-sdk/provider-v3';
// Types only: the `@ai-sdk/provider@4` runtime needs Node 22, these fakes do not.
import type {
  LanguageModelV4,
  LanguageModelV4CallOptions,
  LanguageModelV4StreamPart,
} from '@ai-sdk/provider-v4';

/** What one `doStream` call of a scripted model does, with its spec version's stream parts. */
export type ScriptOf<Part> = Part[] | { reject: unknown } | { hang: Part[] };

/** What one `doStream` call of a {@link scriptedModel} (V2) does. */
export type ModelScript = ScriptOf<LanguageModelV2StreamPart>;

/** Replays `scripts`, one per `doStream` call, recording the calls and stream cancellations. */
function replay<Part, Options>(scripts: ScriptOf<Part>[]) {
  const calls: Options[] = [];
  const cancelled: unknown[] = [];
  async function doStream(options: Options) {
    calls.push(options);
    const script = scripts.shift();
    if (script === undefined) throw new Error('no script left');
    if ('reject' in script) throw script.reject;
    const parts = Array.isArray(script) ? script : script.hang;
    const hang = !Array.isArray(script);
    return {
      stream: new ReadableStream<Part>({
        start(controller) {
          for (const part of parts) controller.enqueue(part);
          if (!hang) controller.close();
        },
        cancel(reason) {
          cancelled.push(reason);
        },
      }),
    };
  }
  return { doStream, calls, cancelled };
}

const notUsed = () => Promise.reject(new Error('not used'));

/** A hand-written LanguageModelV2 (`ai` 5) that replays scripted stream parts and records its calls. */
export function scriptedModel(scripts: ModelScript[]) {
  const { doStream, calls, cancelled } = replay<
    LanguageModelV2StreamPart,
    LanguageModelV2CallOptions
  >(scripts);
  const model: LanguageModelV2 = {
    specificationVersion: 'v2',
    provider: 'scripted.chat',
    modelId: 'scripted-1',
    supportedUrls: {},
    doGenerate: notUsed,
    doStream,
  };
  return { model, calls, cancelled };
}

/** A hand-written LanguageModelV3 (`ai` 6), typed against `@ai-sdk/provider@3`. */
export function scriptedModelV3(scripts: ScriptOf<LanguageModelV3StreamPart>[]) {
  const { doStream, calls, cancelled } = replay<
    LanguageModelV3StreamPart,
    LanguageModelV3CallOptions
  >(scripts);
  const model: LanguageModelV3 = {
    specificationVersion: 'v3',
    provider: 'scripted-v3.chat',
    modelId: 'scripted-v3',
    supportedUrls: {},
    doGenerate: notUsed,
    doStream,
  };
  return { model, calls, cancelled };
}

/** A hand-written LanguageModelV4 (`ai` 7), typed against `@ai-sdk/provider@4`. */
export function scriptedModelV4(scripts: ScriptOf<LanguageModelV4StreamPart>[]) {
  const { doStream, calls, cancelled } = replay<
    LanguageModelV4StreamPart,
    LanguageModelV4CallOptions
  >(scripts);
  const model: LanguageModelV4 = {
    specificationVersion: 'v4',
    provider: 'scripted-v4.chat',
    modelId: 'scripted-v4',
    supportedUrls: {},
    doGenerate: notUsed,
    doStream,
  };
  return { model, calls, cancelled };
}
