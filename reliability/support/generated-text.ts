import fc from 'fast-check';
import { percentEncode } from './percent-encode.js';

// Text generators of the generated-input scenarios: what attackers and broken clients send
// (any UTF-16 code unit, lone surrogates included) next to what legitimate clients send.

/** Any UTF-16 code unit, lone surrogates, NUL and bidi controls more often than chance. */
export const codeUnit = fc.oneof(
  { weight: 6, arbitrary: fc.constantFrom(...'abcXYZ019 -_./%?#&=@:') },
  { weight: 3, arbitrary: fc.integer({ min: 0, max: 0xffff }).map((unit) => String.fromCharCode(unit)) },
  {
    weight: 1,
    arbitrary: fc.constantFrom('\ud800', '\udbff', '\udc00', '\udfff', '\u0000', '\u202e', '\ufeff'),
  },
);
/** Strings of any code units, up to `maxLength`. */
export const anyUnits = (maxLength: number) => fc.string({ unit: codeUnit, maxLength });
/** Well-formed Unicode, as a legitimate client sends, at most `maxCodeUnits` UTF-16 code units. */
export const wellFormed = (minLength: number, maxLength: number, maxCodeUnits = 256) =>
  fc.string({ unit: 'grapheme', minLength, maxLength }).filter((text) => text.length <= maxCodeUnits);
/** A long run of one character: past a limit without costing fast-check its shrinking time. */
export const longText = (minLength: number, maxLength: number) =>
  fc
    .tuple(fc.constantFrom('a', 'é', '%', '/', '\ud800'), fc.integer({ min: minLength, max: maxLength }))
    .map(([char, length]) => char.repeat(length));
/** JSON values of every type but string. */
export const notAString = fc.oneof(
  fc.integer(),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.boolean(),
  fc.constant(null),
  fc.array(fc.integer(), { maxLength: 3 }),
  fc.dictionary(fc.string({ maxLength: 4 }), fc.integer(), { maxKeys: 2 }),
);

/** A query string of generated keys and values; keys may repeat. */
export const queryString = (keys: fc.Arbitrary<string>) =>
  fc
    .array(fc.tuple(keys, anyUnits(20)), { maxLength: 4 })
    .map((pairs) => pairs.map(([key, value]) => `${percentEncode(key)}=${percentEncode(value)}`).join('&'));
