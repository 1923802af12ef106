/**
 * The fields of an `event_callback` that Bolt 5's `App.processEvent` reads to route it (team,
 * enterprise, user and conversation ids) before any listener runs. It assumes Slack's shapes and
 * throws a TypeError on others (`event.user: null`, `event.channel: null`, an event that is not
 * an object, `authorizations: [null]`), which would answer a signed request 500 and make Slack
 * redeliver it for nothing. The listener's normalizer checks the fields it reads itself.
 */

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Slack ids (`T0001`, `E0001`) have no lowercase letters. Bolt keys a plain object with the team
 * id, so `constructor` or `__proto__` must not pass.
 */
const SLACK_ID = /^[A-Z0-9]+$/;

function idProblem(value: unknown, path: string): string | null {
  return value === undefined || value === null || (typeof value === 'string' && SLACK_ID.test(value))
    ? null
    : `${path}: expected a Slack id (capital letters and digits)`;
}

/**
 * Why Bolt could not route this `event_callback` body, as `path: problem`, or null when it can.
 * Pure.
 */
export function eventCallbackProblem(body: Record<string, unknown>): string | null {
  const { authorizations, event } = body;
  if (authorizations !== undefined) {
    if (!Array.isArray(authorizations) || !authorizations.every(isRecord))
      return 'authorizations: expected a list of objects';
    for (const [index, authorization] of authorizations.entries()) {
      const problem =
        idProblem(authorization.team_id, `authorizations[${index}].team_id`) ??
        idProblem(authorization.enterprise_id, `authorizations[${index}].enterprise_id`);
      if (problem !== null) return problem;
    }
  }
  const problem = idProblem(body.team_id, 'team_id') ?? idProblem(body.enterprise_id, 'enterprise_id');
  if (problem !== null) return problem;
  if (!isRecord(event)) return 'event: expected an object';
  if (typeof event.type !== 'string') return 'event.type: expected a string';
  for (const key of ['user', 'channel'] as const) {
    const value = event[key];
    if (value !== undefined && typeof value !== 'string' && !isRecord(value))
      return `event.${key}: expected a string or an object`;
  }
  for (const key of ['item', 'subteam'] as const) {
    if (event[key] !== undefined && !isRecord(event[key])) return `event.${key}: expected an object`;
  }
  return null;
}
