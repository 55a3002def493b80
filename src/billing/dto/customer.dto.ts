import { ApiProperty } from '@nestjs/swagger';
import { IsEmail, IsString, Matches, MaxLength } from 'class-validator';
import type { BillingCustomer } from '../billing-customer.entity';
import { TenantDto } from './tenant.dto';

export class CreateCustomerDto extends TenantDto {
  @ApiProperty({ example: 'billing@acme.example', description: 'Where invoices go.' })
  @IsString()
  @MaxLength(320)
  @IsEmail({ allow_display_name: false, allow_ip_domain: false }, { message: 'email must be an email address' })
  email: string;

  @ApiProperty({ example: 'Acme Ltd', maxLength: 200 })
  @IsString()
  @Matches(/\S/, { message: 'name must not be blank' })
  @MaxLength(200)
  name: string;
}

/** The spec's customer object (snake_case created_at as the spec writes it). */
export class CustomerDto {
  @ApiProperty({ example: 'cus_7Hq2VbN4kLw9sZr1McX0pT' })
  id: string;

  @ApiProperty({ example: 'billing@acme.example' })
  email: string;

  @ApiProperty({ example: 'Acme Ltd' })
  name: string;

  @ApiProperty({ format: 'date-time' })
  created_at: string;

  static from(customer: BillingCustomer): CustomerDto {
    return { id: customer.id, email: customer.email, name: customer.name, created_at: customer.createdAt.toISOString() };
  }
}
