import { SwitchboardError } from '@switchboard/core';
import type { Update } from 'grammy/types';

type Kind = 'integer' | 'string' | 'boolean' | 'object' | 'array';

/**
 * The fields the normalizer reads, by path under the update. A field is checked only when its
 * parent object is present; `required` means required within that parent. Everything else in
 * the update is passed through untouched (Telegram adds fields with every Bot API version).
 */
const FIELDS: ReadonlyArray<readonly [path: string, kind: Kind, required: boolean]> = [
  ['update_id', 'integer', true],
  ['message', 'object', false],
  ['message.message_id', 'integer', true],
  ['message.date', 'integer', true],
  ['message.chat', 'object', true],
  ['message.chat.id', 'integer', true],
  ['message.chat.type', 'string', true],
  ['message.from', 'object', false],
  ['message.from.id', 'integer', true],
  ['message.from.is_bot', 'boolean', true],
  ['message.sender_chat', 'object', false],
  ['message.sender_chat.id', 'integer', true],
  ['message.text', 'string', false],
  ['message.caption', 'string', false],
  ['message.entities', 'array', false],
  ['message.caption_entities', 'array', false],
  ['message.message_thread_id', 'integer', false],
  ['message.photo', 'array', false],
  ['message.voice', 'object', false],
  ['message.voice.file_id', 'string', true],
  ['message.document', 'object', false],
  ['message.document.file_id', 'string', true],
  ['message.reply_to_message', 'object', false],
  ['message.reply_to_message.message_id', 'integer', true],
  ['message.reply_to_message.from', 'object', false],
  ['message.reply_to_message.from.id', 'integer', true],
];

const ENTITY_FIELDS: ReadonlyArray<readonly [name: string, kind: Kind]> = [
  ['type', 'string'],
  ['offset', 'integer'],
  ['length', 'integer'],
];

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function hasKind(value: unknown, kind: Kind): boolean {
  switch (kind) {
    case 'integer':
      return Number.isSafeInteger(value);
    case 'object':
      return isObject(value);
    case 'array':
      return Array.isArray(value);
    default:
      return typeof value === kind;
  }
}

const KIND_NAMES: Record<Kind, string> = {
  integer: 'an integer',
  string: 'a string',
  boolean: 'a boolean',
  object: 'an object',
  array: 'an array',
};

/** The value at `path`, and whether its parent object exists. */
function lookup(root: Record<string, unknown>, path: string): { parentExists: boolean; value: unknown } {
  const parts = path.split('.');
  let parent: unknown = root;
  for (const part of parts.slice(0, -1)) {
    if (!isObject(parent)) return { parentExists: false, value: undefined };
    parent = parent[part];
  }
  if (!isObject(parent)) return { parentExists: false, value: undefined };
  return { parentExists: true, value: parent[parts.at(-1) ?? ''] };
}

function entityProblems(entities: unknown, path: string): string[] {
  if (!Array.isArray(entities)) return [];
  return entities.flatMap((entity: unknown, index) => {
    const at = `${path}[${index}]`;
    if (!isObject(entity)) return [`${at}: must be an object`];
    return ENTITY_FIELDS.filter(([name, kind]) => !hasKind(entity[name], kind)).map(
      ([name, kind]) => `${at}.${name}: must be ${KIND_NAMES[kind]}`,
    );
  });
}

/**
 * Checks that a webhook body is a Telegram `Update` with the fields the channel reads and
 * returns it typed. Reports every problem at once, one `body.<path>: problem` per line, as an
 * SB_HTTP_BAD_REQUEST (400) — a malformed body must never crash the process.
 */
export function parseUpdate(body: unknown): Update {
  if (!isObject(body)) {
    throw new SwitchboardError('SB_HTTP_BAD_REQUEST', {
      message: 'body: must be a JSON object (a Telegram Update)',
    });
  }
  const problems: string[] = [];
  for (const [path, kind, required] of FIELDS) {
    const { parentExists, value } = lookup(body, path);
    if (!parentExists) continue;
    if (value === undefined) {
      if (required) problems.push(`body.${path}: required`);
    } else if (!hasKind(value, kind)) {
      problems.push(`body.${path}: must be ${KIND_NAMES[kind]}`);
    }
  }
  const message = body.message;
  if (isObject(message)) {
    problems.push(
      ...entityProblems(message.entities, 'body.message.entities'),
      ...entityProblems(message.caption_entities, 'body.message.caption_entities'),
    );
  }
  if (problems.length > 0) {
    throw new SwitchboardError('SB_HTTP_BAD_REQUEST', {
      message: `invalid Telegram update: ${problems.join('; ')}`,
      details: { problems },
    });
  }
  return body as unknown as Update;
}
