import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { SuppressionEntry } from './suppression-entry.entity';
import { SuppressionController } from './suppression.controller';
import { SuppressionLifts } from './suppression-lifts';
import { SoftBounces } from './soft-bounces';
import { SuppressionService } from './suppression.service';

@Module({
  imports: [TypeOrmModule.forFeature([SuppressionEntry])],
  controllers: [SuppressionController],
  providers: [SuppressionService, SuppressionLifts, SoftBounces],
  exports: [SuppressionService, SuppressionLifts, SoftBounces],
})
export class SuppressionModule {}
