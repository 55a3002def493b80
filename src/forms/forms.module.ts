import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { Form } from './form.entity';
import { FormsController } from './forms.controller';
import { FormSubmission } from './form-submission.entity';
import { FormsService } from './forms.service';
import { NotificationsModule } from './notifications/notifications.module';
import { SubmissionsExportService } from './submissions-export.service';

/** Forms and their settings; domains and collections keep their forms here. */
@Module({
  imports: [TypeOrmModule.forFeature([Form, FormSubmission]), NotificationsModule],
  controllers: [FormsController],
  providers: [FormsService, SubmissionsExportService],
  exports: [FormsService, NotificationsModule],
})
export class FormsModule {}
