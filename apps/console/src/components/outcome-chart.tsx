import { useEffect, useRef } from 'preact/hooks';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import { OUTCOMES, type Outcome } from '../api-types.js';

/** One colour per outcome, readable on the light and the dark background alike. */
export const OUTCOME_COLOURS: Record<Outcome, string> = {
  completed: '#2e9d5b',
  discarded: '#8a8f98',
  ignored: '#5b8def',
  dropped: '#e08a1e',
  dead_lettered: '#d64545',
  duplicate: '#9b6bd6',
};

export interface OutcomeSeries {
  /** Start of each minute, ms since the epoch, oldest first. */
  minutes: number[];
  /** Messages per minute for each outcome, aligned with `minutes`. */
  counts: Record<Outcome, number[]>;
}

/**
 * Messages per minute by outcome as stacked bars. uPlot has no stacking of its own: each series
 * is drawn at the running total up to it, the tallest first, so each bar shows its own band on
 * top of the ones below.
 */
export function OutcomeChart({ data, label }: { data: OutcomeSeries; label: string }) {
  const holder = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot | null>(null);

  const totals = OUTCOMES.map((_, index) =>
    data.minutes.map((_minute, at) =>
      OUTCOMES.slice(0, index + 1).reduce((sum, outcome) => sum + (data.counts[outcome][at] ?? 0), 0),
    ),
  );
  // Tallest (the running total of every outcome) first, so that each later one paints over it.
  const order = [...OUTCOMES.keys()].reverse();
  const aligned: uPlot.AlignedData = [
    data.minutes.map((at) => at / 1000),
    ...order.map((index) => totals[index]!),
  ];

  useEffect(() => {
    const element = holder.current!;
    const bars = uPlot.paths.bars!({ size: [0.8, 40] });
    const options: uPlot.Options = {
      width: element.clientWidth,
      height: 240,
      series: [
        { label: 'minute' },
        ...order.map((index) => {
          const outcome = OUTCOMES[index]!;
          return {
            label: outcome,
            stroke: OUTCOME_COLOURS[outcome],
            fill: OUTCOME_COLOURS[outcome],
            paths: bars,
            points: { show: false },
          };
        }),
      ],
      axes: [
        { stroke: 'currentColor', grid: { stroke: 'rgba(128,128,128,0.2)' } },
        { stroke: 'currentColor', grid: { stroke: 'rgba(128,128,128,0.2)' }, label: 'messages / min' },
      ],
      // Half a minute either side, so the first and the current minute's bars are drawn whole.
      scales: {
        x: { time: true, range: (_plot, min, max) => [min - 30, max + 30] },
        y: { range: (_plot, _min, max) => [0, Math.max(5, max * 1.1)] },
      },
      // The totals under the chart name the colours; a legend of the hovered minute would repeat them.
      legend: { show: false },
    };
    plot.current = new uPlot(options, aligned, element);
    const resized = new ResizeObserver(() =>
      plot.current?.setSize({ width: element.clientWidth, height: 240 }),
    );
    resized.observe(element);
    return () => {
      resized.disconnect();
      plot.current?.destroy();
    };
    // Built once; later data goes through setData below.
  }, []);

  useEffect(() => {
    plot.current?.setData(aligned);
  });

  return <div ref={holder} class="chart" role="img" aria-label={label} />;
}
