import { DynamicModule, Module } from '@nestjs/common';
import { CollectionsModule } from '../../collections/collections.module';
import { AppConfigService } from '../../config/app-config.service';
import { DomainsModule } from '../../domains/domains.module';
import { EmailModule } from '../../email/email.module';
import { TemplatesModule } from '../../templates/templates.module';
import { FormsModule } from '../forms.module';
import { InstantFormsController } from '../instant/instant-forms.controller';
import { InstantFormsService } from '../instant/instant-forms.service';
import { CAPTCHA_VERIFIER_OPTIONS, CaptchaVerifier } from '../spam/captcha-verifier';
import { ChallengeService } from '../spam/challenge.service';
import { AcknowledgmentGate } from './acknowledgment-gate';
import { FormSenders } from './form-sender';
import { FormTargets } from './form-targets';
import { OriginPolicy } from './origin-policy';
import { SubmissionsController } from './submissions.controller';
import { SubmissionsService } from './submissions.service';

const PROVIDERS = [
  SubmissionsService,
  FormTargets,
  OriginPolicy,
  FormSenders,
  AcknowledgmentGate,
  ChallengeService,
  CaptchaVerifier,
  InstantFormsService,
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
 * The submission pipeline of every form endpoint, and instant forms. Imported last by AppModule: its
 * `POST /{domain}/{form}` route must come after every other two-segment POST.
 */
@Module({})
export class SubmissionsModule {
  static register(config: AppConfigService): DynamicModule {
    return {
      module: SubmissionsModule,
      imports: [FormsModule, DomainsModule, CollectionsModule, EmailModule.register(config), TemplatesModule],
      controllers: [InstantFormsController, SubmissionsController],
      providers: PROVIDERS,
    };
  }
}
