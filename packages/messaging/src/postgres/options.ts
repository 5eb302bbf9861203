// The PostgreSQL message backend's options: your pool or a connection string, and the schema (see @stratus/sql).
import type { PostgresConnectionOptions } from '@stratus/sql';

export type PostgresMessageBackendOptions = PostgresConnectionOptions;
