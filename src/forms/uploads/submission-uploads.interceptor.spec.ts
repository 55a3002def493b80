import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Body, Controller, HttpCode, INestApplication, Post, UploadedFiles, UseInterceptors } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import request from 'supertest';
import { AllExceptionsFilter } from '../../common/errors/all-exceptions.filter';
import { DatabaseOutage } from '../../common/errors/database-unavailable';
import { AppConfigService } from '../../config/app-config.service';
import { checkUploads, MAX_SUBMISSION_UPLOAD_BYTES, ReceivedFile, SubmissionUploadsInterceptor } from './submission-uploads';

@Controller('submit')
class SubmitController {
  @Post()
  @HttpCode(200)
  @UseInterceptors(SubmissionUploadsInterceptor)
  async submit(@Body() body: Record<string, unknown>, @UploadedFiles() files: ReceivedFile[] | undefined) {
    const attachments = await checkUploads(files);
    return { body, files: attachments.map(({ field, filename, contentType, size }) => ({ field, filename, contentType, size })) };
  }
}

describe('SubmissionUploadsInterceptor', () => {
  let app: INestApplication;
  const uploadDir = mkdtempSync(join(tmpdir(), 'uploads-interceptor-'));

  beforeAll(async () => {
    const config = AppConfigService.fromEnv({ NODE_ENV: 'test', PUBLIC_URL: 'https://mailroom.test', UPLOAD_DIR: uploadDir });
    const moduleRef = await Test.createTestingModule({
      controllers: [SubmitController],
      providers: [{ provide: AppConfigService, useValue: config }],
    }).compile();
    app = moduleRef.createNestApplication({ logger: false });
    app.useGlobalFilters(new AllExceptionsFilter(config, new DatabaseOutage()));
    await app.init();
  });

  afterAll(async () => {
    await app.close();
    rmSync(uploadDir, { recursive: true, force: true });
  });

  /** The upload directory once the files of answered requests are gone (they go as the response closes). */
  const leftOver = async () => {
    for (let i = 0; i < 50 && readdirSync(uploadDir).length > 0; i++) await new Promise((resolve) => setTimeout(resolve, 20));
    return readdirSync(uploadDir);
  };

  it('parses fields and files, with UTF-8 file names', async () => {
    const response = await request(app.getHttpServer())
      .post('/submit')
      .field('name', 'Ann')
      .field('tags', 'a')
      .field('tags', 'b')
      .attach('cv', Buffer.from('%PDF-1.4\n%%EOF\n'), { filename: 'résumé.pdf', contentType: 'application/pdf' });
    expect(response.status).toBe(200);
    expect(response.body).toEqual({
      body: { name: 'Ann', tags: ['a', 'b'] },
      files: [{ field: 'cv', filename: 'résumé.pdf', contentType: 'application/pdf', size: 15 }],
    });
    expect(await leftOver()).toEqual([]);
  });

  it('leaves JSON and url-encoded bodies alone', async () => {
    const json = await request(app.getHttpServer())
      .post('/submit')
      .send({ name: 'Ann', nested: { a: 1 } });
    expect(json.body).toEqual({ body: { name: 'Ann', nested: { a: 1 } }, files: [] });
    const form = await request(app.getHttpServer()).post('/submit').type('form').send('name=Ann');
    expect(form.body).toEqual({ body: { name: 'Ann' }, files: [] });
  });

  it('answers 413 PAYLOAD_TOO_LARGE for a file over 10 MB', async () => {
    const response = await request(app.getHttpServer())
      .post('/submit')
      .attach('big', Buffer.alloc(MAX_SUBMISSION_UPLOAD_BYTES + 1), 'big.bin');
    expect(response.status).toBe(413);
    expect(response.body).toEqual({
      error: {
        code: 'PAYLOAD_TOO_LARGE',
        message: 'Each uploaded file may be at most 10 MB',
        details: { limit_bytes: MAX_SUBMISSION_UPLOAD_BYTES },
      },
      documentation: 'https://mailroom.test/docs#errors',
    });
    expect(await leftOver()).toEqual([]);
  });

  it.each([
    [
      'too many fields',
      (r: request.Test) => Array.from({ length: 201 }, (_, i) => i).reduce((t, i) => t.field(`f${i}`, 'x'), r),
      'Too many fields',
    ],
    [
      'too many files',
      (r: request.Test) => Array.from({ length: 11 }, (_, i) => i).reduce((t, i) => t.attach(`f${i}`, Buffer.from('x'), `${i}.txt`), r),
      'Too many files',
    ],
    ['a field value over 100 KB', (r: request.Test) => r.field('message', 'x'.repeat(100 * 1024 + 1)), 'Field value too long'],
    ['a field name over 200 characters', (r: request.Test) => r.field('n'.repeat(201), 'x'), 'Field name too long'],
  ])('answers 400 VALIDATION_FAILED for %s', async (_, build, reason) => {
    const response = await build(request(app.getHttpServer()).post('/submit'));
    expect(response.status).toBe(400);
    expect(response.body.error.code).toBe('VALIDATION_FAILED');
    expect(response.body.error.message).toContain(reason);
    expect(response.body.error.message).toContain('at most 200 fields');
  });

  it('answers 400 VALIDATION_FAILED for a multipart body cut short', async () => {
    const response = await request(app.getHttpServer())
      .post('/submit')
      .set('Content-Type', 'multipart/form-data; boundary=XyZ')
      .send('--XyZ\r\nContent-Disposition: form-data; name="a"\r\n\r\nvalue');
    expect(response.status).toBe(400);
    expect(response.body.error.code).toBe('VALIDATION_FAILED');
    expect(response.body.error.message).toContain('Unexpected end of form');
  });

  it('answers 400 VALIDATION_FAILED for a multipart body without a boundary', async () => {
    const response = await request(app.getHttpServer()).post('/submit').set('Content-Type', 'multipart/form-data').send('--XyZ\r\n\r\n');
    expect(response.status).toBe(400);
    expect(response.body.error.code).toBe('VALIDATION_FAILED');
  });

  it('answers 415 for multipart types other than form-data', async () => {
    const response = await request(app.getHttpServer())
      .post('/submit')
      .set('Content-Type', 'multipart/mixed; boundary=XyZ')
      .send('--XyZ\r\n\r\nhello\r\n--XyZ--\r\n');
    expect(response.status).toBe(415);
    expect(response.body.error.code).toBe('UNSUPPORTED_MEDIA_TYPE');
  });

  it('refuses an executable through checkUploads with the D-10 body', async () => {
    const response = await request(app.getHttpServer())
      .post('/submit')
      .attach('invoice', Buffer.concat([Buffer.from('MZ'), Buffer.alloc(126)]), 'invoice.pdf');
    expect(response.status).toBe(400);
    expect(response.body.error.details).toEqual({
      fields: [{ field: 'invoice', message: '"invoice.pdf" is refused: it is a program or installer (exe)' }],
    });
  });
});
