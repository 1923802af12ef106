/** The timings of a harness's adapters, and the one limit they pace at. */
export interface ConformanceTimings {
  sendTimeoutMs: number;
  editIntervalMs: number;
  /** `limit` calls per `perMs` into one chat: the fake's limit too. */
  perChat: { limit: number; perMs: number };
}

/**
 * The `outbound` entry of a harness's channel config (as YAML has it): the send deadline, the
 * edit interval and pacing at `perChat` alone, so that the checks' timings and the config agree.
 */
export function conformanceOutbound({ sendTimeoutMs, editIntervalMs, perChat }: ConformanceTimings) {
  return {
    send_timeout: `${sendTimeoutMs}ms`,
    edit_interval: `${editIntervalMs}ms`,
    rate: {
      enabled: true,
      per_bot: null,
      per_chat: { limit: perChat.limit, per: `${perChat.perMs}ms` },
      per_group: null,
    },
  };
}
