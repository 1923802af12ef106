import type { IncomingMessage } from 'node:http';

/** A file part of a multipart/form-data request. */
export interface UploadedFile {
  /** The part's `filename`, `''` when it gave none. */
  filename: string;
  /** The part's content type, when it gave one. */
  contentType?: string;
  bytes: Buffer;
}

/** A multipart/form-data request as the fakes read it: its text fields and its files, by part name. */
export interface MultipartBody {
  fields: Record<string, string>;
  files: Record<string, UploadedFile>;
}

/** The boundary of a `multipart/form-data` content type; undefined for another type. */
export function multipartBoundary(contentType: string | undefined): string | undefined {
  if (contentType === undefined || !/^multipart\/form-data/i.test(contentType)) return undefined;
  return /boundary=(?:"([^"]+)"|([^;\s]+))/i
    .exec(contentType)
    ?.slice(1)
    .find((part) => part !== undefined);
}

/** A header's parameter, quoted or not (grammY leaves `filename=` unquoted). */
function parameterOf(header: string, name: string): string | undefined {
  const match = new RegExp(`(?:^|;)\\s*${name}=(?:"([^"]*)"|([^;\\r\\n]*))`, 'i').exec(header);
  return match === null ? undefined : (match[1] ?? match[2]?.trim());
}

/** Reads the whole request body. */
export function readRawBody(request: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => resolve(Buffer.concat(chunks)));
    request.on('error', reject);
  });
}

/**
 * Splits a multipart/form-data `body` (RFC 7578) into its fields and files, byte-exact: what
 * the platforms' multipart endpoints (Telegram's uploads, Discord's `files[n]`) receive.
 */
export function parseMultipart(body: Buffer, boundary: string): MultipartBody {
  const fields: Record<string, string> = {};
  const files: Record<string, UploadedFile> = {};
  const delimiter = Buffer.from(`--${boundary}`);
  let at = body.indexOf(delimiter);
  while (at !== -1) {
    const start = at + delimiter.length;
    if (body.subarray(start, start + 2).toString() === '--') break;
    const next = body.indexOf(delimiter, start);
    if (next === -1) break;
    // The part lies between the CRLF after the delimiter and the CRLF before the next one.
    const part = body.subarray(start + 2, next - 2);
    const headerEnd = part.indexOf('\r\n\r\n');
    const headers = part.subarray(0, headerEnd).toString('utf8');
    const content = part.subarray(headerEnd + 4);
    const disposition = /content-disposition:([^\r\n]*)/i.exec(headers)?.[1] ?? '';
    const name = parameterOf(disposition, 'name') ?? '';
    const filename = parameterOf(disposition, 'filename');
    const contentType = /content-type:\s*([^\r\n]*)/i.exec(headers)?.[1]?.trim();
    if (filename === undefined) fields[name] = content.toString('utf8');
    else
      files[name] = {
        filename,
        ...(contentType === undefined ? {} : { contentType }),
        bytes: Buffer.from(content),
      };
    at = next;
  }
  return { fields, files };
}
