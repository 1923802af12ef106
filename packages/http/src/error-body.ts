import { z } from 'zod';

/** The one error shape of every HTTP answer (STYLE "Errors"). */
export const ErrorBodySchema = z.object({
  error: z.object({
    code: z.string(),
    message: z.string(),
    details: z.record(z.string(), z.unknown()).optional(),
  }),
});
export type ErrorBody = z.output<typeof ErrorBodySchema>;
