import { AppException } from '../common/errors/app.exception';
import { checkLiquidTemplate } from './liquid-dialect';
import { FORM_TEMPLATE_TYPES, TemplateType } from './template.entity';
import { TemplateContent, TemplateRenderer } from './template-renderer';

/** Form and acknowledgment templates are Liquid (D-28); email templates are Handlebars (D-21). */
export function isFormTemplate(type: TemplateType): boolean {
  return FORM_TEMPLATE_TYPES.includes(type);
}

/** Checks content in its type's language; a problem is a 400 VALIDATION_FAILED naming each bad part and its line. */
export function checkTemplateContent(type: TemplateType, content: TemplateContent, handlebars: TemplateRenderer): void {
  if (!isFormTemplate(type)) {
    handlebars.compile(content);
    return;
  }
  const problems = checkLiquidTemplate(content);
  if (problems.length > 0) throw AppException.validation(problems);
}

/** /email/send takes email templates only: a form template is a 400 on `template`. */
export function assertSendable(template: { name: string; type: TemplateType }): void {
  if (isFormTemplate(template.type)) {
    throw AppException.invalidField(
      'template',
      `${template.name} is a form template (type ${template.type}): it renders form submissions and cannot be sent with /email/send`,
    );
  }
}
