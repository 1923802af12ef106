/**
 * What one read-only check of a configured part found (`switchboard doctor`): a channel's
 * credentials, a pipeline's endpoint, a store's settings. Each channel, pipeline and store package
 * probes its own part; the app only collects the answers.
 */
export interface ProbeResult {
  /** `ok`: works; `warn`: works, but deserves a look; `fail`: will not work as configured. */
  level: 'ok' | 'warn' | 'fail';
  /** What was found, one line for a human: `Telegram bot @name`, `unreachable: ECONNREFUSED`. */
  detail: string;
  /** What to do about a warning or failure, one line. */
  hint?: string;
}
