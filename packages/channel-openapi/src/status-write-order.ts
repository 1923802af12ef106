import type { MessageStatus, MessageStatusStore } from '@switchboard/core';
import { createKeyedSerializer } from './keyed-serializer.js';
import type { TrackedMessage } from './tracked-message.js';

/** The order of one channel's status writes per message, so that the store ends with the latest. */
export interface StatusWriteOrder {
  /**
   * Writes `status` of a followed message after its earlier writes. `joining` the commit that ends
   * the message, it is written at once instead, so that it joins that commit: the store is then
   * the outbox's SQLite file, whose group commit applies writes in the order they are issued.
   * `landed` runs once the message's last write so far has landed (`TrackedMessage.writing`).
   */
  write(message: TrackedMessage, status: MessageStatus, joining: boolean, landed: () => void): Promise<void>;
  /**
   * Runs `change`, a read-change-write of a message known only to the store (a dead letter reply
   * after the status was written and forgotten), after the earlier ones of `id`.
   */
  changeStored<T>(id: string, change: () => Promise<T>): Promise<T>;
  /** Resolves once the changes of `id` under way have settled. */
  idle(id: string): Promise<void>;
}

/** Orders the writes of `statuses`; a followed message's writes chain on its `TrackedMessage`. */
export function createStatusWriteOrder(statuses: MessageStatusStore): StatusWriteOrder {
  const storeOnly = createKeyedSerializer();

  return {
    write(message, status, joining, landed) {
      const previous = message.writing;
      const written =
        previous === undefined || joining ? statuses.put(status) : previous.then(() => statuses.put(status));
      const settled = () => {
        if (message.writing !== tail) return;
        message.writing = undefined;
        landed();
      };
      const both = previous === undefined || !joining ? written : Promise.allSettled([previous, written]);
      const tail: Promise<void> = both.then(settled, settled);
      message.writing = tail;
      return written;
    },
    changeStored: (id, change) => storeOnly.run(id, change),
    idle: (id) => storeOnly.idle(id),
  };
}
