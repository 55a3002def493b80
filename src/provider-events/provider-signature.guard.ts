import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import type { Request, Response } from 'express';
import { Webhook, WebhookVerificationError } from 'standardwebhooks';
import { AppException } from '../common/errors/app.exception';
import { ErrorCode } from '../common/errors/error-code';
import { RateLimitService } from '../rate-limits/rate-limit.service';
import { AppConfigService } from '../config/app-config.service';
import { providerEventsBodyOf } from './raw-body';

/**
 * The Standard Webhooks signature of a provider call (D-24): `webhook-signature` is `v1,<base64 HMAC-SHA256 of
 * "<webhook-id>.<webhook-timestamp>.<body>">` keyed with the UTF-8 bytes of PROVIDER_WEBHOOK_SECRET, and the
 * timestamp within 5 minutes of now (the package's tolerance). Checked on the bytes as they arrived, before they
 * are parsed: an unsigned caller learns nothing about the body's shape, and costs no parse. A bad signature spends
 * the client IP's failure budget; an IP that spent it is refused before its body is read (RateLimitService.enforce).
 */
@Injectable()
export class ProviderSignatureGuard implements CanActivate {
  private readonly webhook: Webhook | null;

  constructor(
    config: AppConfigService,
    private readonly limiter: RateLimitService,
  ) {
    const secret = config.env.PROVIDER_WEBHOOK_SECRET;
    // `format: 'raw'` takes the key bytes as they are (a string would be read as Latin-1, not UTF-8).
    this.webhook = secret ? new Webhook(Buffer.from(secret, 'utf8'), { format: 'raw' }) : null;
  }

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const http = context.switchToHttp();
    const request = http.getRequest<Request>();
    if (!this.webhook)
      throw new AppException(ErrorCode.SignatureInvalid, 'Provider events are not enabled: PROVIDER_WEBHOOK_SECRET is not set');
    // null: no body at all.
    if (request.is('application/json') === false) {
      throw new AppException(ErrorCode.UnsupportedMediaType, 'Provider events must be sent as application/json');
    }
    const headers = {
      'webhook-id': request.header('webhook-id') ?? '',
      'webhook-timestamp': request.header('webhook-timestamp') ?? '',
      'webhook-signature': request.header('webhook-signature') ?? '',
    };
    try {
      this.webhook.verify(providerEventsBodyOf(request), headers, { jsonParse: false });
    } catch (err) {
      if (!(err instanceof WebhookVerificationError)) throw err;
      await this.limiter.countAuthFailure(request, http.getResponse<Response>());
      throw new AppException(ErrorCode.SignatureInvalid, `The webhook signature was not accepted: ${err.message}`);
    }
    return true;
  }
}
