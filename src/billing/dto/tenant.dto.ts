import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsNotEmpty, IsOptional, IsString, MaxLength } from 'class-validator';
import { AppException } from '../../common/errors/app.exception';

const TENANT_DESCRIPTION =
  'The account billed (a tenant is an account id). An admin key names its own account; only operator admin keys may name another. ' +
  'Any other id is 404, like an unknown one.';

/** A tenant id as every billing body carries it. */
export class TenantDto {
  @ApiProperty({ example: 'acc_4fQ2Zb8VtN1mKc7LpR3sWx', description: TENANT_DESCRIPTION })
  @IsString()
  @IsNotEmpty()
  @MaxLength(100)
  tenantId: string;
}

/** GET /api/billing/info and DELETE /api/billing/subscription take the tenant from the JSON body or the query (D-32). */
export class OptionalTenantDto {
  @ApiPropertyOptional({
    example: 'acc_4fQ2Zb8VtN1mKc7LpR3sWx',
    description: `${TENANT_DESCRIPTION} Here or in the other place (body or query).`,
  })
  @IsOptional()
  @IsString()
  @IsNotEmpty()
  @MaxLength(100)
  tenantId?: string;
}

/** The tenant named by the body or the query; both may name it, but not two different ones. */
export function tenantIdOf(body: OptionalTenantDto, query: OptionalTenantDto): string {
  if (body.tenantId !== undefined && query.tenantId !== undefined && body.tenantId !== query.tenantId) {
    throw AppException.invalidField('tenantId', 'the body and the query name different tenants');
  }
  const tenantId = body.tenantId ?? query.tenantId;
  if (tenantId === undefined) throw AppException.invalidField('tenantId', 'tenantId is required, in the JSON body or the query');
  return tenantId;
}
