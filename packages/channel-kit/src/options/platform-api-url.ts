import { z } from 'zod';

/** An http(s) base URL of a platform API, for self-hosted servers, proxies and test fakes. */
export const platformApiUrl = () =>
  z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' }).optional();
