import type { Pipeline } from '@switchboard/core';
import { z } from 'zod';

/** `pipelines[]` keys of `type: echo`: none beyond the type. */
export const EchoPipelineOptionsSchema = z.strictObject({ type: z.literal('echo') });
export type EchoPipelineOptions = z.output<typeof EchoPipelineOptionsSchema>;

/** A pipeline that answers every turn with its (merged) text: the quick start's default. */
export function createEchoPipeline(id: string): Pipeline {
  return {
    id,
    async run(query) {
      return { replies: [{ text: query.text }] };
    },
  };
}
