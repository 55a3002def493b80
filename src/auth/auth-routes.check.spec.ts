import { Controller, Get } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { Test } from '@nestjs/testing';
import { Auth, Public } from './auth.decorator';
import { AuthRoutesCheck } from './auth-routes.check';

@Controller('open')
class WellDeclaredController {
  @Get()
  @Public()
  open() {
    return 'ok';
  }

  @Get('admin')
  @Auth({ keyTypes: ['admin'] })
  admin() {
    return 'ok';
  }
}

@Controller('forgotten')
class ForgottenController {
  @Get()
  forgotten() {
    return 'oops';
  }
}

async function boot(controller: new () => unknown) {
  const moduleRef = await Test.createTestingModule({
    imports: [DiscoveryModule],
    controllers: [controller],
    providers: [AuthRoutesCheck],
  }).compile();
  const app = moduleRef.createNestApplication({ logger: false });
  try {
    await app.init();
  } finally {
    await app.close();
  }
}

describe('AuthRoutesCheck', () => {
  it('lets an app whose every route declares its access start', async () => {
    await expect(boot(WellDeclaredController)).resolves.toBeUndefined();
  });

  it('refuses to start when a route has neither @Auth nor @Public', async () => {
    await expect(boot(ForgottenController)).rejects.toThrow('Routes without @Auth or @Public: ForgottenController.forgotten');
  });
});
