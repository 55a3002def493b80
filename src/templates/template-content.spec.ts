import { AppException } from '../common/errors/app.exception';
import { TemplateType } from './template.entity';
import { assertSendable, checkTemplateContent, isFormTemplate } from './template-content';
import { TemplateContent, TemplateRenderer } from './template-renderer';

const renderer = new TemplateRenderer();

function problems(type: TemplateType, content: TemplateContent): { field: string; message: string }[] {
  try {
    checkTemplateContent(type, content, renderer);
    return [];
  } catch (err) {
    expect(err).toBeInstanceOf(AppException);
    expect((err as AppException).status).toBe(400);
    return (err as AppException).details!.fields as { field: string; message: string }[];
  }
}

describe('template types', () => {
  it('treats form and acknowledgment as form templates, email not', () => {
    expect([isFormTemplate('email'), isFormTemplate('form'), isFormTemplate('acknowledgment')]).toEqual([false, true, true]);
  });

  it('checks email templates as Handlebars', () => {
    expect(problems('email', { subject: 'Hi {{name}}', html: '{{#items}}<li>{{title}}</li>{{/items}}' })).toEqual([]);
    expect(problems('email', { subject: 's', html: '<p>\n{{#if a}}\n{{/unless}}' })).toEqual([
      { field: 'html', message: expect.stringMatching(/^line 2: if doesn't match unless/) },
    ]);
  });

  it('checks form and acknowledgment templates as Liquid, naming part and line', () => {
    const liquid = {
      subject: 'From {{ form.name || "someone" }}',
      html: '{% if form.a %}{{ form.a | nl2br }}{% endif %}',
      text: '{{ timestamp | date: "%Y" }}',
    };
    expect(problems('form', liquid)).toEqual([]);
    expect(problems('acknowledgment', liquid)).toEqual([]);
    expect(problems('form', { subject: 's', text: 'ok\n{% if form.a %}', html: '{{ form.a | raw }}' })).toEqual([
      { field: 'text', message: 'line 2: tag {% if form.a %} not closed' },
      { field: 'html', message: 'line 1: undefined filter: raw (values are always HTML-escaped in html)' },
    ]);
  });

  it('sends only email templates', () => {
    expect(() => assertSendable({ name: 'welcome', type: 'email' })).not.toThrow();
    for (const type of ['form', 'acknowledgment'] as const) {
      let error: AppException | undefined;
      try {
        assertSendable({ name: 'contact', type });
      } catch (err) {
        error = err as AppException;
      }
      expect(error?.status).toBe(400);
      expect(error?.details?.fields).toEqual([{ field: 'template', message: expect.stringMatching(/^contact is a form template/) }]);
    }
  });
});
