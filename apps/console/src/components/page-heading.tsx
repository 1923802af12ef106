import type { ComponentChildren } from 'preact';

/** A page's h1: focusable from script, so a navigation can move focus to it. */
export function PageHeading({ children }: { children: ComponentChildren }) {
  return (
    <h1 tabIndex={-1} class="page-heading">
      {children}
    </h1>
  );
}
