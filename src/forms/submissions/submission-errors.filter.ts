import { ArgumentsHost, Catch, ExceptionFilter } from '@nestjs/common';
import type { NextFunction, Request, Response } from 'express';
import { AppException } from '../../common/errors/app.exception';
import { ErrorCode } from '../../common/errors/error-code';
import { FormTargets, SubmissionRoute } from './form-targets';
import { isNavigation, postingPage, requestLanguage, routeOfPath } from './navigation';
import { OriginPolicy, requestOrigin } from './origin-policy';
import { ErrorAnswer, errorPage } from './pages';

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
    const route = routeOfPath(request.path);
    response.vary('Origin');
    const origin = await this.readableBy(exception, route, request, response).catch(() => null);
    if (origin) response.setHeader('Access-Control-Allow-Origin', origin);
    // POST /submit/{form} is answered in JSON whoever asks.
    if (route.kind !== 'reference' && isNavigation(request)) answerWithPage(request, response);
  }

  /** The Origin that may read this error: one that may post to the form. */
  private async readableBy(exception: unknown, route: SubmissionRoute, request: Request, response: Response): Promise<string | null> {
    const origin = requestOrigin(request.get('origin'), undefined);
    // No such form: nothing to allow, and looking again would count a second failed lookup against the client.
    if (!origin || (exception instanceof AppException && exception.code === ErrorCode.NotFound)) return null;
    // Whether a page may read the answer is the form's origins' decision, not the key's (a public key of another
    // domain is a 403 the page should see); only a slug needs the key to name a form.
    const auth = route.kind === 'reference' && !route.ref.startsWith('frm_') ? request.auth : undefined;
    const form = await this.targets.resolve(route, { auth, origin, request, response });
    return (await this.origins.allows(form, origin)) ? origin.origin : null;
  }
}

/**
 * Makes the global filter's D-10 body go out as a page: its status and headers stay, the JSON becomes HTML in the
 * visitor's language with a link back to the page that posted.
 */
function answerWithPage(request: Request, response: Response): void {
  const json = response.json.bind(response);
  response.json = (body: unknown) => {
    const error = (body as { error?: ErrorAnswer['error'] } | null)?.error;
    if (!error?.code) return json(body);
    const retryAfter = Number(response.getHeader('Retry-After')) || undefined;
    const answer: ErrorAnswer = { status: response.statusCode, error, retryAfter };
    response.setHeader('Content-Type', 'text/html; charset=utf-8');
    return response.send(errorPage(answer, requestLanguage(request), postingPage(request)));
  };
}
