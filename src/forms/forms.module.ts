import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { Form } from './form.entity';
import { FormsController } from './forms.controller';
import { FormSubmission } from './form-submission.entity';
import { FormsService } from './forms.service';

/** Forms and their settings; domains and collections keep their forms here. */
@Module({
  imports: [TypeOrmModule.forFeature([Form, FormSubmission])],
  controllers: [FormsController],
  providers: [FormsService],
  exports: [FormsService],
})
export class FormsModule {}
