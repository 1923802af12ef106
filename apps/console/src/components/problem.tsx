/** A failed load, said where the data would be; refusals are handled by the app (login). */
export function Problem({ error }: { error: Error | undefined }) {
  if (error === undefined) return null;
  return (
    <p role="alert" class="problem">
      {error.message}
    </p>
  );
}
