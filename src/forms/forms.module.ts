import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { Form } from './form.entity';
import { FormsController } from './forms.controller';
import { FormSubmission } from './form-submission.entity';
import { FormsService } from './forms.service';
import { SubmissionsExportService } from './submissions-export.service';

/** Forms and their settings; domains and collections keep their forms here. */
@Module({
  imports: [TypeOrmModule.forFeature([Form, FormSubmission])],
  controllers: [FormsController],
  providers: [FormsService, SubmissionsExportService],
  exports: [FormsService],
})
export class FormsModule {}
