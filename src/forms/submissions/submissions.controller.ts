import {
  Controller,
  createParamDecorator,
  ExecutionContext,
  Get,
  Header,
  HttpCode,
  Options,
  Param,
  Post,
  Query,
  Req,
  Res,
  UseFilters,
  UseInterceptors,
} from '@nestjs/common';
import {
  ApiBadRequestResponse,
  ApiBody,
  ApiConflictResponse,
  ApiConsumes,
  ApiForbiddenResponse,
  ApiNoContentResponse,
  ApiNotFoundResponse,
  ApiOkResponse,
  ApiOperation,
  ApiResponse,
  ApiTags,
  ApiTooManyRequestsResponse,
} from '@nestjs/swagger';
import type { Request, Response } from 'express';
import { Auth, Public } from '../../auth/auth.decorator';
import { AppException } from '../../common/errors/app.exception';
import { ErrorBodyDto } from '../../common/errors/error-body';
import { ErrorCode } from '../../common/errors/error-code';
import { HTML_PAGE } from '../../common/http/page-responses';
import { Idempotent } from '../../common/idempotency/idempotent.decorator';
import { QUOTA_429_DESCRIPTION } from '../../quotas/quota-docs';
import { ChallengeDto } from '../spam/challenge.dto';
import { ChallengeService } from '../spam/challenge.service';
import { ReceivedFile, SubmissionUploadsInterceptor } from '../uploads/submission-uploads';
import { SubmissionAnswerDto } from './dto/submission-answer.dto';
import { formLanguage } from '../i18n/language';
import { FormTargets, SubmissionRoute } from './form-targets';
import { routeOfPath, wantsJson } from './navigation';
import { OriginPolicy, requestOrigin } from './origin-policy';
import { thankYouPage } from './pages';
import { SubmissionErrorsFilter } from './submission-errors.filter';
import { SubmissionInput, SubmissionsService } from './submissions.service';
import { ThankYouLinks } from './thank-you-links';

/** Who may post: anyone from an allowed origin (D-26), or a key holding forms.send (a public key: its domain only). */
const SUBMITTERS = { keyTypes: ['admin', 'usage', 'public'], permission: 'forms.send', anonymous: true } as const;

const FIELDS_BODY = {
  description:
    'Form fields, as JSON, url-encoded or multipart (files: 10 MB per submission, kept with it, linked from the ' +
    'notification and attached while it stays under 5 MB; types Gmail and Outlook refuse are refused unless the form ' +
    'allows them in allowedFileTypes). ' +
    'Fields starting with _ steer the submission and are not mailed: _redirect (or _next), _subject, _replyto, _cc (only ' +
    'addresses in the form’s ccAllowed), _format=plain, _language, and the honeypots _service_honeypot, _gotcha and ' +
    'botcheck (Web3Forms’ checkbox). Text with NUL or an unpaired surrogate, in a name or a value, is a 400.',
  schema: {
    type: 'object',
    additionalProperties: { oneOf: [{ type: 'string' }, { type: 'array', items: { type: 'string' } }] },
    example: { name: 'Ada Lovelace', email: 'ada@example.org', message: 'Hello!' },
  },
} as const;

/** What every submission handler passes on besides its route: the request and response, the caller, the uploads, the Idempotency-Key claim. */
type PostedRequest = Omit<SubmissionInput, 'route'>;

/**
 * The PostedRequest of a submission route (read after the uploads and idempotency interceptors ran). The
 * response is only decorated with headers and a status: Nest still sends the handler's answer.
 */
const Posted = createParamDecorator((_data: unknown, context: ExecutionContext): PostedRequest => {
  const http = context.switchToHttp();
  const request = http.getRequest<Request>();
  return {
    request,
    response: http.getResponse<Response>(),
    auth: request.auth,
    files: (request as Request & { files?: ReceivedFile[] }).files,
    idempotency: request.idempotency,
  };
});

/** The documentation every submission route shares. */
function SubmissionRouteDocs(summary: string): MethodDecorator {
  return (target, key, descriptor) => {
    for (const decorator of [
      ApiOperation({
        summary,
        description:
          'A browser’s form post (a navigation: Sec-Fetch-Mode navigate, or Accept with text/html) is answered 303 to ' +
          '`_redirect` (when its origin may post), else to the form’s redirect URL, else to a thank-you page; its errors as ' +
          'an HTML page in the visitor’s language (`_language`, Accept-Language). A post with neither header (test tools, ' +
          'old clients) is redirected too, but its errors are JSON. Scripts (fetch(), XHR, JSON bodies, an Accept without ' +
          'text/html) get `{success, message, submissionId}` and errors as JSON, with CORS headers for an origin that may ' +
          'post. Without a credential the Origin (or Referer) must be a verified domain of the form’s account or one of its ' +
          'allowedOrigins.',
      }),
      ApiConsumes('application/json', 'application/x-www-form-urlencoded', 'multipart/form-data'),
      ApiBody(FIELDS_BODY),
      ApiOkResponse({ type: SubmissionAnswerDto, description: 'Accepted (also for posts blocked as spam: bots learn nothing)' }),
      ApiResponse({ status: 303, description: 'Accepted; a browser is sent on to the redirect URL' }),
      ApiBadRequestResponse({
        type: ErrorBodyDto,
        description: 'A required field is missing, an address or upload is refused, or CHALLENGE_FAILED',
      }),
      ApiForbiddenResponse({ type: ErrorBodyDto, description: 'ORIGIN_NOT_ALLOWED, or a public key of another domain' }),
      ApiNotFoundResponse({ type: ErrorBodyDto, description: 'No such form (another account’s form is the same 404)' }),
      ApiConflictResponse({ type: ErrorBodyDto, description: 'The form has nowhere to deliver to, or an Idempotency-Key conflict' }),
      ApiTooManyRequestsResponse({
        type: ErrorBodyDto,
        description: `The form’s per-IP limit (10 an hour unless the form sets rateLimit); or ${QUOTA_429_DESCRIPTION}`,
      }),
    ]) {
      decorator(target, key, descriptor);
    }
  };
}

/**
 * Every form submission endpoint of the spec's table: one handler behind each path, one pipeline behind them
 * all. Registered last (see AppModule): `/{domain}/{form}` would otherwise shadow other two-segment POSTs.
 */
@ApiTags('Form submissions')
@Controller()
@UseInterceptors(SubmissionUploadsInterceptor) // before @Idempotent(): the request hash covers the parsed fields
@UseFilters(SubmissionErrorsFilter)
export class SubmissionsController {
  constructor(
    private readonly submissions: SubmissionsService,
    private readonly targets: FormTargets,
    private readonly origins: OriginPolicy,
    private readonly challenges: ChallengeService,
    private readonly thankYouLinks: ThankYouLinks,
  ) {}

  @Post('v1/:domain/send')
  @HttpCode(200)
  @Auth({ ...SUBMITTERS, domainParam: 'domain' })
  @Idempotent()
  @SubmissionRouteDocs('Send a contact message to a domain’s contactRecipients')
  postContactV1(@Param('domain') domain: string, @Posted() posted: PostedRequest) {
    return this.answer({ kind: 'domain', domain, slug: 'send' }, posted);
  }

  @Post('submit/:form')
  @HttpCode(200)
  @Auth(SUBMITTERS)
  @Idempotent()
  @SubmissionRouteDocs('Submit to a form by id (or, with a key, by slug); always answered in JSON')
  postSubmit(@Param('form') ref: string, @Posted() posted: PostedRequest) {
    return this.answer({ kind: 'reference', ref }, posted, true);
  }

  @Post('f/:collection/:form')
  @HttpCode(200)
  @Auth(SUBMITTERS)
  @Idempotent()
  @SubmissionRouteDocs('Submit to a form of a collection (same as /c/{collection}/{form})')
  postCollectionAlias(@Param('collection') collection: string, @Param('form') slug: string, @Posted() posted: PostedRequest) {
    return this.answer({ kind: 'collection', collection, slug }, posted);
  }

  @Post('f/:formId')
  @HttpCode(200)
  @Auth(SUBMITTERS)
  @Idempotent()
  @SubmissionRouteDocs('Submit to a form by id')
  postById(@Param('formId') id: string, @Posted() posted: PostedRequest) {
    return this.answer({ kind: 'form', id }, posted);
  }

  @Post('c/:collection/:form')
  @HttpCode(200)
  @Auth(SUBMITTERS)
  @Idempotent()
  @SubmissionRouteDocs('Submit to a form of a collection')
  postCollection(@Param('collection') collection: string, @Param('form') slug: string, @Posted() posted: PostedRequest) {
    return this.answer({ kind: 'collection', collection, slug }, posted);
  }

  @Post(':domain/:form')
  @HttpCode(200)
  @Auth({ ...SUBMITTERS, domainParam: 'domain' })
  @Idempotent()
  @SubmissionRouteDocs('Submit to a form of a domain; /{domain}/send goes to the domain’s contactRecipients')
  postDomainForm(@Param('domain') domain: string, @Param('form') slug: string, @Posted() posted: PostedRequest) {
    return this.answer({ kind: 'domain', domain, slug }, posted);
  }

  @Options(['v1/:domain/send', 'submit/:form', 'f/:formId', 'f/:collection/:form', 'c/:collection/:form', ':domain/:form'])
  @Public()
  @ApiOperation({ summary: 'CORS preflight of a form post: answered for origins that may post to the form only' })
  @ApiNoContentResponse({ description: 'The origin may post: Access-Control-Allow-* headers' })
  @ApiForbiddenResponse({ type: ErrorBodyDto, description: 'ORIGIN_NOT_ALLOWED' })
  @ApiNotFoundResponse({ type: ErrorBodyDto })
  async preflight(
    // Unused, but the validation pipe checks them as it does every route's: text PostgreSQL refuses is a 400, not a failed query.
    @Param() _params: Record<string, string>,
    @Req() req: Request,
    @Res({ passthrough: true }) res: Response,
  ): Promise<void> {
    const origin = requestOrigin(req.get('origin'), undefined);
    const form = await this.targets.resolve(routeOfPath(req.path), { origin, request: req, response: res });
    if (!origin || !(await this.origins.allows(form, origin))) {
      throw new AppException(ErrorCode.OriginNotAllowed, `${origin?.origin ?? 'A request without an Origin'} may not post to this form`);
    }
    res.status(204);
    res.vary('Origin');
    res.setHeader('Access-Control-Allow-Origin', origin.origin);
    res.setHeader('Access-Control-Allow-Methods', 'POST, OPTIONS');
    res.setHeader(
      'Access-Control-Allow-Headers',
      req.get('access-control-request-headers')
        ? 'Content-Type, Accept, X-Requested-With, X-Public-Token, X-Api-Key, Authorization, Idempotency-Key'
        : 'Content-Type',
    );
    res.setHeader('Access-Control-Max-Age', '600');
  }

  @Get('forms/thank-you')
  @Public()
  @Header('Content-Type', 'text/html; charset=utf-8')
  @ApiOperation({
    summary: 'The thank-you page browsers land on when a form has no redirect URL',
    description: 'In the language `lang` (else Accept-Language), linking back to `back` when `sig` shows a post put it there.',
  })
  @ApiOkResponse({ description: 'An HTML page', content: HTML_PAGE })
  thankYou(@Query() query: Record<string, unknown>, @Req() req: Request): string {
    const text = (value: unknown) => (typeof value === 'string' ? value : undefined);
    const language = formLanguage(text(query.lang), req.get('accept-language'));
    return thankYouPage(language, this.thankYouLinks.verifiedBack(text(query.back), text(query.sig)));
  }

  @Get('forms/:formId/challenge')
  @Public()
  @ApiOperation({
    summary: 'A proof-of-work challenge for a form (ALTCHA)',
    description: 'Point the ALTCHA widget’s challengeurl here; the form then posts the solution in the field altcha.',
  })
  @ApiOkResponse({ type: ChallengeDto })
  @ApiNotFoundResponse({ type: ErrorBodyDto })
  async challenge(@Param('formId') formId: string, @Req() req: Request, @Res({ passthrough: true }) res: Response): Promise<ChallengeDto> {
    const form = await this.targets.resolve({ kind: 'form', id: formId }, { origin: null, request: req, response: res });
    res.setHeader('Access-Control-Allow-Origin', '*'); // a challenge is no secret: any page may fetch one
    res.setHeader('Cache-Control', 'no-store');
    return this.challenges.create(form);
  }

  private async answer(route: SubmissionRoute, posted: PostedRequest, alwaysJson = false): Promise<SubmissionAnswerDto> {
    const { request, response } = posted;
    const outcome = await this.submissions.submit({ route, ...posted });
    response.vary('Origin');
    if (outcome.corsOrigin) response.setHeader('Access-Control-Allow-Origin', outcome.corsOrigin);
    if (!alwaysJson && !wantsJson(request)) seeOther(response, outcome.redirect);
    return outcome.answer;
  }
}

/**
 * Answers 303 with a Location. Nest sets the route's status (200) again after the handler returns, so the
 * status is fixed here for this response; the JSON answer still goes out as the body.
 */
function seeOther(response: Response, location: string): void {
  response.status(303).location(location);
  response.status = () => response;
}
