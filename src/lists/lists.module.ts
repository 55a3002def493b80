import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { ListSubscriber } from './list-subscriber.entity';
import { ListsController } from './lists.controller';
import { ListsService } from './lists.service';
import { MailingList } from './mailing-list.entity';

/** Mailing lists and their subscribers. List sends are the email module's: it imports this one. */
@Module({
  imports: [TypeOrmModule.forFeature([MailingList, ListSubscriber])],
  controllers: [ListsController],
  providers: [ListsService],
  exports: [ListsService],
})
export class ListsModule {}
