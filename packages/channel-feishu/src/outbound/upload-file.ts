import { attachmentFile, mimeEssence } from '@switchboard/channel-kit';
import type { Attachment } from '@switchboard/core';
import type { FeishuApi } from './open-api.js';

/** A message that shows an uploaded file: its `msg_type` and its `content` (JSON in a string). */
export interface FeishuFileMessage {
  msgType: 'image' | 'file' | 'audio';
  content: string;
}

/**
 * `file_type`s of `POST /open-apis/im/v1/files` by mime type; any other file is a `stream`. Opus
 * is for audio only (an audio message plays an opus upload alone); mp4 is left out, as a video
 * message needs a cover image too.
 */
const FILE_TYPES: Record<string, 'pdf' | 'doc' | 'xls' | 'ppt'> = {
  'application/pdf': 'pdf',
  'application/msword': 'doc',
  'application/vnd.openxmlformats-officedocument.wordprocessingml.document': 'doc',
  'application/vnd.ms-excel': 'xls',
  'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet': 'xls',
  'application/vnd.ms-powerpoint': 'ppt',
  'application/vnd.openxmlformats-officedocument.presentationml.presentation': 'ppt',
};
const OPUS_TYPES = new Set(['audio/ogg', 'audio/opus']);

/** The `file_type` a file is uploaded as. */
export function feishuFileType(attachment: Attachment, mimeType: string | undefined): string {
  const essence = mimeEssence(mimeType);
  if (attachment.type === 'audio' && OPUS_TYPES.has(essence)) return 'opus';
  return FILE_TYPES[essence] ?? 'stream';
}

/**
 * The SDK's client flattens a request's `data` into a plain object and axios then encodes it as
 * multipart with the `form-data` package, which sends a Buffer with no file name; given the
 * platform's own FormData, axios keeps each File's name and type.
 */
const MULTIPART = {
  headers: { 'Content-Type': 'multipart/form-data' },
  env: { FormData: globalThis.FormData, Blob: globalThis.Blob },
};

/** Options of `uploadFeishuFile`. */
export interface UploadOptions {
  api: FeishuApi;
  /** The configured channel id, for errors. */
  channelId: string;
  /** `outbound.allow_private_urls`: whether a url attachment may lead to a private address. */
  allowPrivateUrls: boolean;
  signal: AbortSignal;
}

/**
 * Uploads `attachment` and resolves with the message that shows it. Feishu takes no file by URL,
 * so a `url` is fetched by the gateway first (channel-kit's `attachmentFile`: bounded, public
 * addresses only unless `allowPrivateUrls`). An image goes to `POST /open-apis/im/v1/images`
 * (`image_type=message`) → an `image` message of its `image_key`; a file or audio to `POST
 * /open-apis/im/v1/files` → a `file` message of its `file_key`, or an `audio` message for opus.
 * Not paced: an upload posts nothing into the chat.
 */
export async function uploadFeishuFile(
  attachment: Attachment,
  options: UploadOptions,
): Promise<FeishuFileMessage> {
  const { api, signal, channelId, allowPrivateUrls } = options;
  const file = await attachmentFile(attachment, { signal, channelId, allowPrivateUrls });
  const blob = new File([file.bytes], file.name, file.mimeType === undefined ? {} : { type: file.mimeType });
  if (attachment.type === 'image') {
    const answer = await api.call<{ data?: { image_key?: string } }>(
      'im.image.create',
      {
        method: 'POST',
        url: '/open-apis/im/v1/images',
        data: { image_type: 'message', image: blob },
        ...MULTIPART,
      },
      signal,
    );
    return { msgType: 'image', content: JSON.stringify({ image_key: answer.data?.image_key }) };
  }
  const fileType = feishuFileType(attachment, file.mimeType);
  const answer = await api.call<{ data?: { file_key?: string } }>(
    'im.file.create',
    {
      method: 'POST',
      url: '/open-apis/im/v1/files',
      data: { file_type: fileType, file_name: file.name, file: blob },
      ...MULTIPART,
    },
    signal,
  );
  const content = JSON.stringify({ file_key: answer.data?.file_key });
  return { msgType: fileType === 'opus' ? 'audio' : 'file', content };
}
