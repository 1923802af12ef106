/** The hash slot of a key, as Redis Cluster computes it (CRC16 of its hash tag, mod 16384). */
declare module 'cluster-key-slot' {
  export default function calculateSlot(key: string): number;
}
