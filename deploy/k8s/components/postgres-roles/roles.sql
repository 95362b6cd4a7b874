-- One PostgreSQL role per process of the mesh, each owning its own schema and nothing else.
--
-- Run as a superuser, or as a role with CREATEROLE that owns the database (a managed service's
-- admin user), connected to the mesh's database. The database must exist: the services cannot
-- create it with these roles (platform::db::ensure_database only creates a missing one).
--
--   psql "postgres://<admin>@<host>:5432/lab" -v ON_ERROR_STOP=1 \
--     -v identity_password=… -v catalog_password=… -v orders_password=… \
--     -v payments_password=… -v shipping_password=… -v results_password=… \
--     -v webhooks_password=… -f deploy/k8s/components/postgres-roles/roles.sql
--
-- Each password is optional: a role whose variable is not given keeps its password (or has none,
-- so it cannot log in with one). Each process then connects as its own role through its own
-- `<PREFIX>_DATABASE_URL` (IDENTITY_, CATALOG_, ORDERS_, PAYMENTS_, SHIPPING_, RESULTS_,
-- WEBHOOKS_; Kubernetes: key `<process>` of the Secret lab-database-urls).
--
-- Idempotent: safe to run again, also on a database where the services ran as one shared role
-- (the schemas and every table, view and sequence in them change hands).
--
-- | role          | owns schema | process      |
-- | lab_identity  | identity    | identity-svc |
-- | lab_gateway   | gateway     | (none)       |
-- | lab_catalog   | catalog     | catalog-svc  |
-- | lab_orders    | orders      | orders-svc   |
-- | lab_payments  | payments    | payments-svc |
-- | lab_shipping  | shipping    | shipping-svc |
-- | lab_results   | results     | results-svc  |
-- | lab_webhooks  | webhooks    | webhooks-svc |
--
-- Rights each role has: CONNECT and CREATE on this database, its own schema (as owner). No
-- other schema, not even `public`, grants it anything. CREATE on the database is needed because
-- every service's migrator runs `CREATE SCHEMA IF NOT EXISTS <its schema>` at start (sqlx's
-- `create-schemas` in <service>/sqlx.toml), and PostgreSQL checks that privilege before it
-- notices that the schema exists; it lets a role create new, empty schemas of its own, never
-- touch another's.
--
-- The gateway has no database any more: lab_gateway only keeps what an older release left in
-- the `gateway` schema, and gets no password here. Where that release left the identity tables
-- (customers, api_keys, operators, staff_revocations) in `gateway`, they are handed to
-- lab_identity (with USAGE on `gateway`), so that identity-svc's first migration can move them
-- into `identity` (identity-svc/migrations/0002_identity.sql; docs/operations.md).

\set ON_ERROR_STOP on
SET client_min_messages = warning;
SELECT current_database() AS lab_database,
       (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) AS lab_admin_is_superuser
\gset

BEGIN;

CREATE TEMPORARY TABLE lab_mesh_roles (role name PRIMARY KEY, schema name NOT NULL UNIQUE) ON COMMIT DROP;
INSERT INTO lab_mesh_roles VALUES
    ('lab_gateway', 'gateway'),
    ('lab_identity', 'identity'),
    ('lab_catalog', 'catalog'),
    ('lab_orders', 'orders'),
    ('lab_payments', 'payments'),
    ('lab_shipping', 'shipping'),
    ('lab_results', 'results'),
    ('lab_webhooks', 'webhooks');

-- Only the roles granted below (and the admin) may connect to the mesh's database or use its
-- `public` schema; PostgreSQL grants both to every role by default.
REVOKE ALL ON DATABASE :"lab_database" FROM PUBLIC;
REVOKE ALL ON SCHEMA public FROM PUBLIC;

-- The roles: LOGIN and nothing else (no superuser, CREATEDB, CREATEROLE, replication or
-- row-security bypass: PostgreSQL's defaults).
SELECT format('CREATE ROLE %I LOGIN', role)
  FROM lab_mesh_roles
 WHERE NOT EXISTS (SELECT FROM pg_roles WHERE rolname = role)
\gexec
SELECT format('ALTER ROLE %I LOGIN', role) FROM lab_mesh_roles
\gexec

-- A non-superuser admin must be a member of a role to give it a schema (PostgreSQL 16 gives a
-- role's creator ADMIN on it, but not SET).
\if :lab_admin_is_superuser
\else
SELECT format('GRANT %I TO CURRENT_USER', role) FROM lab_mesh_roles
\gexec
\endif

SELECT format('GRANT CONNECT, CREATE ON DATABASE %I TO %I', :'lab_database', role)
  FROM lab_mesh_roles
\gexec

-- Each schema belongs to its role. A schema that already exists changes owner, and so does
-- everything in it: tables first (their indexes and the sequences of their serial and identity
-- columns follow them), then what is left (standalone sequences, views).
SELECT format('CREATE SCHEMA IF NOT EXISTS %I AUTHORIZATION %I', schema, role)
  FROM lab_mesh_roles
\gexec
SELECT format('ALTER SCHEMA %I OWNER TO %I', m.schema, m.role)
  FROM lab_mesh_roles m
  JOIN pg_namespace n ON n.nspname = m.schema
 WHERE n.nspowner <> m.role::text::regrole
\gexec
SELECT format('ALTER TABLE %I.%I OWNER TO %I', m.schema, c.relname, m.role)
  FROM lab_mesh_roles m
  JOIN pg_namespace n ON n.nspname = m.schema
  JOIN pg_class c ON c.relnamespace = n.oid
 WHERE c.relkind IN ('r', 'p', 'f') AND c.relowner <> m.role::text::regrole
\gexec
SELECT format('ALTER %s %I.%I OWNER TO %I',
              CASE c.relkind WHEN 'S' THEN 'SEQUENCE' WHEN 'v' THEN 'VIEW'
                             ELSE 'MATERIALIZED VIEW' END,
              m.schema, c.relname, m.role)
  FROM lab_mesh_roles m
  JOIN pg_namespace n ON n.nspname = m.schema
  JOIN pg_class c ON c.relnamespace = n.oid
 WHERE c.relkind IN ('S', 'v', 'm') AND c.relowner <> m.role::text::regrole
\gexec

-- The gateway's identity tables of an older release go to identity-svc, which moves them.
SELECT format('ALTER TABLE gateway.%I OWNER TO lab_identity', c.relname)
  FROM pg_class c
  JOIN pg_namespace n ON n.oid = c.relnamespace
 WHERE n.nspname = 'gateway' AND c.relkind = 'r'
   AND c.relname IN ('customers', 'api_keys', 'operators', 'staff_revocations')
\gexec
SELECT 'GRANT USAGE ON SCHEMA gateway TO lab_identity'
 WHERE EXISTS (SELECT FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
                WHERE n.nspname = 'gateway'
                  AND c.relname IN ('customers', 'api_keys', 'operators', 'staff_revocations'))
\gexec

-- Nothing in a schema is granted to anyone but its owner (PostgreSQL grants nothing on a new
-- schema or table to PUBLIC; this removes grants an earlier setup may have made).
SELECT format('REVOKE ALL ON SCHEMA %I FROM PUBLIC', schema) FROM lab_mesh_roles
\gexec
SELECT format('REVOKE ALL ON ALL TABLES IN SCHEMA %I FROM PUBLIC', schema) FROM lab_mesh_roles
\gexec
SELECT format('REVOKE ALL ON ALL SEQUENCES IN SCHEMA %I FROM PUBLIC', schema) FROM lab_mesh_roles
\gexec

COMMIT;

-- Passwords, each only when its variable is given (:'name' quotes the value as a literal). The
-- server logs these statements when `log_statement` is `ddl` or `all`: pass a SCRAM verifier
-- (`SCRAM-SHA-256$4096:…`, which ALTER ROLE stores as it is) rather than the plain password there.
\if :{?identity_password}
ALTER ROLE lab_identity PASSWORD :'identity_password';
\endif
\if :{?catalog_password}
ALTER ROLE lab_catalog PASSWORD :'catalog_password';
\endif
\if :{?orders_password}
ALTER ROLE lab_orders PASSWORD :'orders_password';
\endif
\if :{?payments_password}
ALTER ROLE lab_payments PASSWORD :'payments_password';
\endif
\if :{?shipping_password}
ALTER ROLE lab_shipping PASSWORD :'shipping_password';
\endif
\if :{?results_password}
ALTER ROLE lab_results PASSWORD :'results_password';
\endif
\if :{?webhooks_password}
ALTER ROLE lab_webhooks PASSWORD :'webhooks_password';
\endif
