/** The gateway's `/metrics` text. */
export async function scrapeMetrics(baseUrl: string): Promise<string> {
  const response = await fetch(`${baseUrl}/metrics`, { signal: AbortSignal.timeout(5_000) });
  return response.text();
}

/**
 * The sum of every series of `name` whose labels include `labels` (`outcome="completed"`), or 0
 * when there is none: enough to read counters and gauges without a Prometheus parser.
 */
export function metricSum(text: string, name: string, labels = ''): number {
  let sum = 0;
  for (const line of text.split('\n')) {
    if (!line.startsWith(name)) continue;
    const rest = line.slice(name.length);
    if (rest[0] !== ' ' && rest[0] !== '{') continue;
    if (labels !== '' && !rest.includes(labels)) continue;
    sum += Number(rest.slice(rest.lastIndexOf(' ') + 1));
  }
  return sum;
}
