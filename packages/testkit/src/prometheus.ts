/** The gateway's `/metrics` text. */
export async function scrapeMetrics(baseUrl: string): Promise<string> {
  const response = await fetch(`${baseUrl}/metrics`, { signal: AbortSignal.timeout(5_000) });
  return response.text();
}

/** `name="value"` pairs: how the exposition writes labels, and how a selector names them. */
const LABEL = /(\w+)="((?:[^"\\]|\\.)*)"/g;

function labelsOf(block: string): Set<string> {
  return new Set(Array.from(block.matchAll(LABEL), ([pair]) => pair));
}

/**
 * The sum of the samples in the Prometheus exposition `text` that `selector` picks, or 0 when
 * there is none. A selector is a metric name, optionally with labels the way PromQL writes them
 * (`switchboard_deliveries_total{channel="tg",outcome="failed"}`); a sample is picked when it has
 * that name and every one of those labels, whatever others it has. Enough to read counters,
 * gauges and a histogram's `_count` without a Prometheus parser.
 */
export function metricValue(text: string, selector: string): number {
  const brace = selector.indexOf('{');
  const name = brace < 0 ? selector : selector.slice(0, brace);
  const wanted = brace < 0 ? [] : [...labelsOf(selector.slice(brace))];
  let sum = 0;
  for (const line of text.split('\n')) {
    if (!line.startsWith(name)) continue;
    const rest = line.slice(name.length);
    if (rest[0] !== ' ' && rest[0] !== '{') continue;
    const valueAt = rest.lastIndexOf(' ');
    const labels = labelsOf(rest.slice(0, valueAt));
    if (wanted.every((label) => labels.has(label))) sum += Number(rest.slice(valueAt + 1));
  }
  return sum;
}

/** What `selector` picks (see `metricValue`) from a fresh scrape of the gateway at `baseUrl`. */
export async function metricValueAt(baseUrl: string, selector: string): Promise<number> {
  return metricValue(await scrapeMetrics(baseUrl), selector);
}
