import { Body, Controller, Get, Header, HttpCode, Param, Post, Redirect, Req, Res, StreamableFile } from '@nestjs/common';
import {
  ApiBadRequestResponse,
  ApiConsumes,
  ApiExtraModels,
  ApiFoundResponse,
  ApiNotFoundResponse,
  ApiOkResponse,
  ApiOperation,
  ApiParam,
  ApiTags,
  getSchemaPath,
} from '@nestjs/swagger';
import type { Request, Response } from 'express';
import { Public } from '../auth/auth.decorator';
import { AppException } from '../common/errors/app.exception';
import { ErrorBodyDto } from '../common/errors/error-body';
import { ErrorCode } from '../common/errors/error-code';
import { ApiNotFoundPageResponse, HTML_PAGE } from '../common/http/page-responses';
import { UnsubscribeDto, UnsubscribeResponseDto } from './dto/unsubscribe.dto';
import type { Hit } from './machine-hits';
import { TrackingService } from './tracking.service';
import { confirmPage, notFoundPage, PAGE_HEADERS, unsubscribedPage } from './unsubscribe-pages';

/** The 43-byte transparent 1×1 GIF. */
const PIXEL = Buffer.from('R0lGODlhAQABAIAAAP///wAAACH5BAEAAAAALAAAAAABAAEAAAICRAEAOw==', 'base64');

const TOKEN_PARAM = { name: 'token', description: 'The token of the link, as the email carries it' };

/** The public links in tracked emails (D-22): the open pixel, click redirects, unsubscribe pages and RFC 8058 one-click. */
@ApiTags('Tracking')
@Controller()
export class TrackingController {
  constructor(private readonly tracking: TrackingService) {}

  @Get('t/o/:token')
  @Public()
  @Header('Cache-Control', 'no-store, private')
  @ApiOperation({
    summary: 'Open pixel',
    description: 'Records an `opened` event (flagged `machine` for privacy proxies and scanners) and answers a transparent 1×1 GIF.',
  })
  @ApiParam(TOKEN_PARAM)
  @ApiOkResponse({ description: 'The 43-byte transparent GIF', content: { 'image/gif': { schema: { type: 'string', format: 'binary' } } } })
  @ApiNotFoundResponse({ type: ErrorBodyDto, description: 'Not an open link of a message tracked for opens' })
  async open(@Param('token') token: string, @Req() req: Request): Promise<StreamableFile> {
    await this.tracking.open(token, hitOf(req));
    return new StreamableFile(PIXEL, { type: 'image/gif', length: PIXEL.length });
  }

  @Get('t/c/:token')
  @Public()
  @Header('Cache-Control', 'no-store, private')
  @Header('Referrer-Policy', 'no-referrer')
  @Redirect()
  @ApiOperation({
    summary: 'Click redirect',
    description:
      'Records a `clicked` event with the URL and redirects to that link of the message: only ever to a URL the message itself links to.',
  })
  @ApiParam(TOKEN_PARAM)
  @ApiFoundResponse({ description: 'Location: the link’s original URL' })
  @ApiNotFoundResponse({ type: ErrorBodyDto, description: 'A tampered or unknown link, or a message not tracked for clicks' })
  async click(@Param('token') token: string, @Req() req: Request): Promise<{ url: string; statusCode: number }> {
    return { url: await this.tracking.click(token, hitOf(req)), statusCode: 302 };
  }

  @Get('u/:token')
  @Public()
  @ApiOperation({
    summary: 'Unsubscribe page',
    description:
      'A confirmation page whose button posts back to the same URL; opening it changes nothing (link scanners open it too). It names ' +
      'the recipient the link is for and what they leave: the list, for a list send; every email from the sender otherwise. A link ' +
      'naming no recipient (sent before links named theirs) of a message to several addresses asks for the address, to email it a ' +
      'link of its own.',
  })
  @ApiParam(TOKEN_PARAM)
  @ApiOkResponse({ description: 'An HTML page', content: HTML_PAGE })
  @ApiNotFoundPageResponse('An unknown link')
  async unsubscribePage(
    @Param('token') token: string,
    @Req() req: Request,
    @Res({ passthrough: true }) res: Response,
  ): Promise<string | void> {
    try {
      const target = await this.tracking.unsubscribeTarget(token);
      res.set(PAGE_HEADERS);
      return confirmPage(target);
    } catch (err) {
      // A person following an unknown link gets a page; any other client, and any other error, the one error body (D-10).
      if (!(err instanceof AppException && err.code === ErrorCode.NotFound) || !wantsHtml(req)) throw err;
      res.set(PAGE_HEADERS).status(404);
      return notFoundPage();
    }
  }

  @Post('u/:token')
  @Public()
  @HttpCode(200)
  @ApiOperation({
    summary: 'Unsubscribe (RFC 8058 one-click, or the page’s form)',
    description:
      'Unsubscribes the recipient the link is for (each recipient’s copy carries a link of its own; `email` is not read): from a ' +
      'list send, the list’s subscriber is marked unsubscribed, and other mail to the address is not affected; from any other ' +
      'message, the address is suppressed for the account (`unsubscribed`, source: the message). One `unsubscribed` event; a repeat ' +
      'changes nothing. A link naming no recipient (sent before links named theirs) of a message to a single address unsubscribes ' +
      'it; of a message to several, it unsubscribes nobody: it needs `email` (400 without it), and when that address was a ' +
      'recipient it is emailed its own link to confirm (once per message and address). Either way the answer is "If this address ' +
      'received the email, we sent it a link to confirm" (`{success, email, confirmationSent: true}`), so that it never tells who ' +
      'an email went to. Browsers (Accept: text/html) get a page, other clients `{success, email}`.',
  })
  @ApiParam(TOKEN_PARAM)
  @ApiConsumes('application/x-www-form-urlencoded', 'application/json')
  @ApiExtraModels(UnsubscribeResponseDto)
  @ApiOkResponse({
    description:
      'Unsubscribed (or already), or a confirmation link sent if the address was a recipient: a page for browsers, ' +
      '`{success, email, confirmationSent?}` for any other client',
    content: { 'application/json': { schema: { $ref: getSchemaPath(UnsubscribeResponseDto) } }, ...HTML_PAGE },
  })
  @ApiBadRequestResponse({
    type: ErrorBodyDto,
    description: '`email` missing on a link naming no recipient of a message to several addresses, or not an email address',
  })
  @ApiNotFoundResponse({ type: ErrorBodyDto })
  async unsubscribe(
    @Param('token') token: string,
    @Body() dto: UnsubscribeDto,
    @Req() req: Request,
    @Res({ passthrough: true }) res: Response,
  ): Promise<UnsubscribeResponseDto | string> {
    const result = await this.tracking.unsubscribe(token, dto.email);
    if (!wantsHtml(req)) return { success: true, email: result.email, ...(result.confirmationSent ? { confirmationSent: true } : {}) };
    res.set(PAGE_HEADERS);
    return unsubscribedPage(result);
  }
}

function hitOf(req: Request): Hit {
  return { userAgent: req.get('user-agent'), ip: req.ip, at: new Date() };
}

/** A browser asks for HTML first; one-click posts from mailbox providers ask for nothing in particular. */
function wantsHtml(req: Request): boolean {
  return req.accepts(['json', 'html']) === 'html';
}
