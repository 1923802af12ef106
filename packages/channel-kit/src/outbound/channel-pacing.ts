import {
  IGNORING_OBSERVER,
  type OutboundObserver,
  type RateBuckets,
  type SendPacer,
  type SendRates,
  createMemoryRateBuckets,
  createSendPacer,
} from '@switchboard/core';

/** The pacing options of every chat channel's factory. */
export interface PacingOptions {
  /**
   * Where the pacing buckets of `config.outbound.rate` live: shared (Redis) when replicas send
   * for the same bot. Default: this process's memory.
   */
  rateBuckets?: RateBuckets;
  /** Told of pacing waits and of the 429s the platform still answers, for metrics. Default: nobody. */
  observer?: OutboundObserver;
}

/** A channel's pacing, resolved from its options. */
export interface ChannelPacing {
  /** Holds each post and edit back until the token buckets of `rates` let it into its chat. */
  pacer: SendPacer;
  /** The observer the pacer reports its waits to; the channel reports the 429s it meets there too. */
  observer: OutboundObserver;
}

/** The pacer of channel `channelId` for its `outbound.rate`, reporting its waits to the observer. */
export function channelPacing(channelId: string, rates: SendRates, options: PacingOptions): ChannelPacing {
  const observer = options.observer ?? IGNORING_OBSERVER;
  const pacer = createSendPacer({
    channel: channelId,
    buckets: options.rateBuckets ?? createMemoryRateBuckets(),
    rates,
    onPaced: (waitedMs) => observer.paced(channelId, waitedMs),
  });
  return { pacer, observer };
}
