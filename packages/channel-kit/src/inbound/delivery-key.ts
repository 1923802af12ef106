/**
 * A stable key for recognising a platform's redelivery (`slack:T0001:Ev0001`): the parts joined
 * by `:`, each with `%` and `:` percent-encoded, so that parts holding a colon cannot make two
 * different deliveries share a key (`a:b` + `c` vs `a` + `b:c`).
 */
export function deliveryKey(...parts: readonly (string | number)[]): string {
  return parts.map((part) => String(part).replaceAll('%', '%25').replaceAll(':', '%3A')).join(':');
}
