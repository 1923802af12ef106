import { describe, expect, it } from 'vitest';
import { messageActivityOf, renderTeamsReplies, teamsAttachmentRefusal } from '../../src/outbound/render.js';

describe('renderTeamsReplies', () => {
  describe('when images carry no mime_type', () => {
    it('tells Teams the type their name or url ends with', () => {
      expect(
        renderTeamsReplies([
          {
            text: 'two',
            attachments: [
              { type: 'image', url: 'https://cdn.example.com/a/photo.JPG?size=large' },
              { type: 'image', data: 'R0lGODlh', name: 'wave.gif' },
            ],
          },
        ]),
      ).toEqual([
        {
          contentType: 'image/jpeg',
          contentUrl: 'https://cdn.example.com/a/photo.JPG?size=large',
          name: 'photo.JPG',
        },
        { contentType: 'image/gif', contentUrl: 'data:image/gif;base64,R0lGODlh', name: 'wave.gif' },
        'two',
      ]);
    });
  });

  describe('when a mime_type carries parameters or capitals', () => {
    it('tells Teams the bare type, in the data URI too', () => {
      expect(
        renderTeamsReplies([
          { attachments: [{ type: 'image', data: 'R0lGODlh', mime_type: 'Image/GIF; charset=binary' }] },
        ]),
      ).toEqual([{ contentType: 'image/gif', contentUrl: 'data:image/gif;base64,R0lGODlh', name: 'image' }]);
    });
  });
});

describe('teamsAttachmentRefusal', () => {
  describe('when an image has a type Teams renders but the name says nothing', () => {
    it('lets it go on its mime_type', () => {
      expect(
        teamsAttachmentRefusal({
          type: 'image',
          url: 'https://cdn.example.com/render',
          mime_type: 'image/jpeg',
        }),
      ).toBeUndefined();
    });
  });

  describe('when a mime_type Teams renders carries parameters or capitals', () => {
    it('lets it go, as WhatsApp and Feishu compare types', () => {
      expect(
        teamsAttachmentRefusal({
          type: 'image',
          url: 'https://cdn.example.com/render',
          mime_type: 'image/JPEG; q=0.9',
        }),
      ).toBeUndefined();
    });
  });

  describe('when a mime_type is one Teams does not render inline', () => {
    it('refuses it, naming the type', () => {
      expect(
        teamsAttachmentRefusal({
          type: 'image',
          url: 'https://cdn.example.com/a.png',
          mime_type: 'image/webp',
        }),
      ).toBe('Teams renders image/png, image/jpeg and image/gif inline, not image/webp');
    });
  });
});

describe('messageActivityOf', () => {
  describe('when the part is an image', () => {
    it('makes it the only attachment of a message activity without text', () => {
      const image = { contentType: 'image/png', contentUrl: 'https://cdn.example.com/a.png', name: 'a.png' };
      expect(messageActivityOf(image)).toEqual({ type: 'message', attachments: [image] });
      expect(messageActivityOf('hi')).toEqual({ type: 'message', text: 'hi' });
    });
  });
});
