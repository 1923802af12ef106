// The public surface of @switchboard/pipelines: one factory and one options schema per type,
// and the signature helpers an `http` pipeline's receiver verifies requests with.

export type { EchoPipelineOptions } from './echo.js';
export { createEchoPipeline, EchoPipelineOptionsSchema } from './echo.js';
export type { HttpPipelineDeps, HttpPipelineOptions } from './http.js';
export type { HttpRequestBody } from './turn-body.js';
export { createHttpPipeline, HttpPipelineOptionsSchema } from './http.js';
export type { OpenAIPipelineDeps, OpenAIPipelineOptions } from './openai.js';
export { createOpenAIPipeline, OpenAIPipelineOptionsSchema } from './openai.js';
export type { AnyPipelineOptions, PipelineProbeOptions } from './probe-pipeline.js';
export { probePipeline } from './probe-pipeline.js';
export type { VerifySignatureOptions } from './signature.js';
export { SIGNATURE_HEADER, signBody, verifySignature } from './signature.js';
export type { ProcessPipelineDeps, ProcessPipelineOptions } from './process/process-pipeline.js';
export {
  checkProcessPipelinePolicy,
  createProcessPipeline,
  ProcessPipelineOptionsSchema,
} from './process/process-pipeline.js';
export type {
  Access,
  Accounts,
  GatewayPrivileges,
  RunAs,
  RunAsProblem,
  WorkerIdentity,
} from './process/run-as.js';
export {
  accessAs,
  gatewayPrivileges,
  readAccounts,
  resolveWorkerIdentity,
  RunAsSchema,
} from './process/run-as.js';
