import { Module } from '@nestjs/common';
import { AppConfigService } from '../../config/app-config.service';
import { DomainsModule } from '../../domains/domains.module';
import { TemplatesModule } from '../../templates/templates.module';
import { OutboxModule } from '../../outbox/outbox.module';
import { FormFilesModule } from '../files/form-files.module';
import { FormsModule } from '../forms.module';
import { NotificationsModule } from '../notifications/notifications.module';
import { CAPTCHA_VERIFIER_OPTIONS, CaptchaVerifier } from '../spam/captcha-verifier';
import { ChallengeService } from '../spam/challenge.service';
import { AcknowledgmentGate } from './acknowledgment-gate';
import { DuplicatePosts } from './duplicate-posts';
import { FormSenders } from './form-sender';
import { FormTargets } from './form-targets';
import { HeldArrivals } from './held-arrivals';
import { OriginPolicy } from './origin-policy';
import { SubmissionsController } from './submissions.controller';
import { SubmissionMail } from './submission-mail';
import { SubmissionsService } from './submissions.service';
import { ThankYouLinks } from './thank-you-links';

const PROVIDERS = [
  SubmissionsService,
  SubmissionMail,
  FormTargets,
  OriginPolicy,
  FormSenders,
  AcknowledgmentGate,
  DuplicatePosts,
  ThankYouLinks,
  HeldArrivals,
  ChallengeService,
  CaptchaVerifier,
  {
    provide: CAPTCHA_VERIFIER_OPTIONS,
    inject: [AppConfigService],
    useFactory: (config: AppConfigService) => ({
      turnstileVerifyUrl: config.env.TURNSTILE_VERIFY_URL,
      hcaptchaVerifyUrl: config.env.HCAPTCHA_VERIFY_URL,
    }),
  },
];

/**
 * The submission pipeline of every form endpoint (instant forms release their held submissions through it). Imported
 * last by AppModule: its `POST /{domain}/{form}` route must come after every other two-segment POST.
 */
@Module({
  imports: [FormsModule, DomainsModule, OutboxModule, TemplatesModule, NotificationsModule, FormFilesModule],
  controllers: [SubmissionsController],
  providers: PROVIDERS,
  exports: [SubmissionMail, HeldArrivals],
})
export class SubmissionsModule {}
