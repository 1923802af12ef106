import { type ProbeResult, isSwitchboardError } from '@switchboard/core';
import { platformReasonOf } from '../outbound/channel-failure.js';
import { type FailureKind, type PlatformFailure, failureKindOf } from '../outbound/platform-failure.js';

/** Options every channel's probe takes (`probe<Platform>Channel(config, options)`). */
export interface ChannelProbeOptions {
  /** The channel's place in the configuration, for hints: `channels[0]`. */
  configPath: string;
  /** How long each platform call may take, in ms. */
  timeoutMs: number;
}

/** What a channel's probe checks, to name it in a failure. */
export interface ProbeTarget {
  /** The platform as people call it: `Telegram`. */
  platform: string;
  /** The API base the probe calls, named when it is out of reach; never a URL that holds a token. */
  apiUrl: string;
  /** The credential the probe presents, named when it is refused: `the bot token`. */
  credential: string;
  /** Where that credential is configured: `channels[0].token`. */
  credentialPath: string;
  /** The platform's own reading of a failure, before the shared one (Telegram: 404 is a malformed token). */
  kindOf?: (failure: PlatformFailure) => FailureKind | undefined;
}

/** A failed SB_CHANNEL_* call (`requestPlatform`, `channelFailure`) as what it means for the probe. */
function probeFailure(failure: PlatformFailure, target: ProbeTarget): ProbeResult {
  const reason = platformReasonOf(failure);
  if (failure.network !== undefined) {
    return {
      level: 'fail',
      detail: `${target.platform} API at ${target.apiUrl} is unreachable: ${failure.network}`,
      hint: `check that this host reaches ${target.apiUrl} (DNS, firewall, proxy)`,
    };
  }
  switch (target.kindOf?.(failure) ?? failureKindOf(failure)) {
    case 'auth':
      return {
        level: 'fail',
        detail: `${target.platform} rejected ${target.credential} (${reason})`,
        hint: `check ${target.credentialPath} (or the variable or file it reads)`,
      };
    case 'rate_limited':
      // The platform answered, so it is reachable; whether the credential is good is not known yet.
      return {
        level: 'warn',
        detail: `${target.platform} rate-limited the check (${reason})`,
        hint: 'run the check again in a minute',
      };
    case 'transient':
      return {
        level: 'fail',
        detail: `${target.platform} failed to answer (${reason})`,
        hint: 'the platform may be down or overloaded: run the check again later',
      };
    case 'refused':
      return {
        level: 'fail',
        detail: `${target.platform} refused the check (${reason})`,
        hint: `check the other settings of ${target.credentialPath.replace(/\.[^.]+$/, '')}`,
      };
  }
}

/**
 * Runs a channel's read-only platform calls and turns the SB_CHANNEL_* error one throws into a
 * failed (or, rate-limited, unsure) result: a refused credential named with its config path, an
 * API out of reach with its base URL, anything else with what the platform said. Other errors
 * are bugs of the probe and propagate.
 */
export async function probePlatform(
  target: ProbeTarget,
  run: () => Promise<ProbeResult>,
): Promise<ProbeResult> {
  try {
    return await run();
  } catch (error) {
    if (!isSwitchboardError(error) || !error.code.startsWith('SB_CHANNEL_')) throw error;
    return probeFailure((error.details ?? {}) as PlatformFailure, target);
  }
}
