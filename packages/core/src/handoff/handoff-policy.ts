import { HANDOFF } from '../inbound/router.js';
import { type PipelinePolicy, PipelinePolicySchema } from '../scheduling/pipeline-policy.js';

/**
 * How the pool schedules messages routed to `__handoff__`: a pipeline of its own with the
 * defaults, no debounce, whose turns only begin the handoff and hold their messages — so they
 * take no slot of a real pipeline, and a store that fails them is retried with the default backoff.
 */
export const HANDOFF_POLICY: PipelinePolicy = {
  ...PipelinePolicySchema.parse({ id: 'handoff' }),
  id: HANDOFF,
};
