import { ArgumentsHost, Catch, ExceptionFilter } from '@nestjs/common';
import type { NextFunction, Request, Response } from 'express';
import { AppException } from '../../common/errors/app.exception';
import { ErrorCode } from '../../common/errors/error-code';
import { withFormQuotaMessage } from '../../quotas/form-quota-message';
import type { Form } from '../form.entity';
import { FormTargets } from './form-targets';
import { backLink, isNavigation, requestLanguage, routeOfPath } from './navigation';
import { OriginPolicy, requestOrigin } from './origin-policy';
import { ErrorAnswer, errorPage } from './pages';

const RESOLVED_FORM = Symbol('the form a submission names');

/** Leaves the form the pipeline found on the request, for the answer to an error thrown after. */
export function rememberForm(request: Request, form: Form): void {
  (request as Request & { [RESOLVED_FORM]?: Form })[RESOLVED_FORM] = form;
}

function rememberedForm(request: Request): Form | undefined {
  return (request as Request & { [RESOLVED_FORM]?: Form })[RESOLVED_FORM];
}

/**
 * The errors of a form post, wherever they are thrown (the auth guard, the uploads and idempotency interceptors, the
 * pipeline): answered with CORS headers when the Origin may post to the form, so a site's fetch() reads the error
 * instead of a network failure; and as an HTML page when the post is a browser's navigation. The answer itself is the
 * global filter's (AllExceptionsFilter): the error goes on to it through Express's error chain.
 */
@Catch()
export class SubmissionErrorsFilter implements ExceptionFilter {
  constructor(
    private readonly targets: FormTargets,
    private readonly origins: OriginPolicy,
  ) {}

  catch(exception: unknown, host: ArgumentsHost): void {
    const [request, response, next] = host.getArgs<[Request, Response, NextFunction]>();
    if (request.method !== 'POST' || response.headersSent) return next(exception);
    const passOn = () => next(exception);
    this.decorate(exception, request, response).then(passOn, passOn);
  }

  private async decorate(exception: unknown, request: Request, response: Response): Promise<void> {
    response.vary('Origin');
    const form = await this.formOf(exception, request, response).catch(() => null);
    const origin = form && (await this.readableBy(form, request).catch(() => null));
    if (origin) response.setHeader('Access-Control-Allow-Origin', origin);
    // POST /submit/{form} is answered in JSON whoever asks.
    if (routeOfPath(request.path).kind === 'reference' || !isNavigation(request)) return;
    answerWithPage(request, response, { back: backLink(request, origin), ownerQuotaText: ownerQuotaText(exception, form) });
  }

  /**
   * The form the post names: as the pipeline found it; for an error before it (the guard, the interceptors) looked up
   * as the pipeline would, with the request's key, counting no failed lookup against the client.
   */
  private async formOf(exception: unknown, request: Request, response: Response): Promise<Form | null> {
    const remembered = rememberedForm(request);
    if (remembered) return remembered;
    // No such form: nothing to look up again.
    if (exception instanceof AppException && exception.code === ErrorCode.NotFound) return null;
    const origin = requestOrigin(request.get('origin'), request.get('referer'));
    return this.targets.lookup(routeOfPath(request.path), { auth: request.auth, origin, request, response });
  }

  /** The Origin that may read this error: one that may post to the form. */
  private async readableBy(form: Form, request: Request): Promise<string | null> {
    const origin = requestOrigin(request.get('origin'), undefined);
    return origin && (await this.origins.allows(form, origin)) ? origin.origin : null;
  }
}

/** An account quota's refusal says the form's own `global_limited` text to visitors, when it has one. */
function ownerQuotaText(exception: unknown, form: Form | null): string | undefined {
  if (!form || !(exception instanceof AppException)) return undefined;
  const owned = withFormQuotaMessage(exception, form.settings.rate_limiting);
  return owned !== exception && owned instanceof AppException ? owned.message : undefined;
}

/**
 * Makes the global filter's D-10 body go out as a page: its status and headers stay, the JSON becomes HTML in the
 * visitor's language, linking back to the page that posted when its origin may post to the form.
 */
function answerWithPage(request: Request, response: Response, page: { back: string | null; ownerQuotaText?: string }): void {
  const json = response.json.bind(response);
  response.json = (body: unknown) => {
    const error = (body as { error?: ErrorAnswer['error'] } | null)?.error;
    if (!error?.code) return json(body);
    const retryAfter = Number(response.getHeader('Retry-After')) || undefined;
    const answer: ErrorAnswer = { status: response.statusCode, error, retryAfter, ownerQuotaText: page.ownerQuotaText };
    response.setHeader('Content-Type', 'text/html; charset=utf-8');
    return response.send(errorPage(answer, requestLanguage(request), page.back));
  };
}
