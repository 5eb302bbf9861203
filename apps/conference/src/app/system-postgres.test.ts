import { after, describe } from 'node:test';
import { postgresForSuite } from '@stratus/testkit';
import { distributed, scenarios } from './fixtures/system-scenarios.js';

const postgres = await postgresForSuite('conference-system-postgres');
after(() => postgres.release());

describe('the conference system scaled out on PostgreSQL alone (queues too)', { skip: postgres.skip }, () => {
  scenarios(distributed(postgres, undefined));
});
