/** The route of a channel's webhook: `/<channel type>/<channel id>`, the id URL-encoded. */
export function webhookPath(type: string, channelId: string): string {
  return `/${type}/${encodeURIComponent(channelId)}`;
}
