import type { MessageStatus } from '@switchboard/core';

/** A final status, with the outcome's reason when the answer is given as it happens. */
export interface FinalStatus {
  status: MessageStatus;
  reason?: string;
}

/** What the status tracker holds for one message while anything still needs it in memory. */
export interface TrackedMessage {
  /** The latest status; null while a request watches a message not accepted yet. */
  status: MessageStatus | null;
  /** Requests waiting for the final status. */
  waiters: Array<(final: FinalStatus | null) => void>;
  /** Settles once the message's last store write so far has landed; undefined when none is under way. */
  writing: Promise<void> | undefined;
  /** Another replica's outcome for it arrived: its final status is that replica's to write. */
  endedElsewhere: boolean;
  /**
   * Its final status is written with the commit that ends it, which has not answered yet: a
   * status of an earlier stage need not be written any more (the final one replaces it).
   */
  ending?: boolean;
  /** A status was not written while `ending`: written after all if that commit fails. */
  skipped?: boolean;
}
