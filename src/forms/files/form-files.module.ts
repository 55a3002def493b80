import { Module } from '@nestjs/common';
import { OutboxModule } from '../../outbox/outbox.module';
import { FormFileLinks } from './file-links';
import { FormFilesController } from './form-files.controller';
import { FormFilesService } from './form-files.service';

/** Stored uploads of form submissions: their download routes and the signed links notifications carry. */
@Module({
  imports: [OutboxModule],
  controllers: [FormFilesController],
  providers: [FormFilesService, FormFileLinks],
  exports: [FormFileLinks],
})
export class FormFilesModule {}
