/**
 * A deep copy of plain data (objects, arrays, primitives), as a store that serializes would keep
 * it. For the in-memory stores' copies on the hot path: `structuredClone` costs some tens of µs
 * for a delivery (a serializer round trip); walking the fields costs a few. Anything else (a
 * `Date`, a `Map`, a class instance, a typed array) is copied by `structuredClone`, which also
 * refuses what it refuses (a function, a symbol). Shared objects are copied once per place, as
 * JSON would copy them.
 */
export function plainCopy<T>(value: T): T {
  if (typeof value !== 'object' || value === null)
    return typeof value === 'function' || typeof value === 'symbol' ? structuredClone(value) : value;
  if (Array.isArray(value)) return value.map(plainCopy) as T;
  const prototype = Object.getPrototypeOf(value);
  if (prototype !== Object.prototype && prototype !== null) return structuredClone(value);
  const copy: Record<string, unknown> = {};
  for (const key of Object.keys(value)) {
    const field = plainCopy((value as Record<string, unknown>)[key]);
    // An own `__proto__` key (JSON.parse makes one) stays a key: assigned, it would set the prototype.
    if (key === '__proto__')
      Object.defineProperty(copy, key, {
        value: field,
        enumerable: true,
        writable: true,
        configurable: true,
      });
    else copy[key] = field;
  }
  return copy as T;
}
