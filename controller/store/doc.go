// Package store keeps sortie's state: jobs, their tasks, every attempt with
// its per-node exit codes, failed launch tries, known failures and the
// notifications' outbox. Every state change is one transaction, so a
// controller killed at any moment finds a consistent store when it starts
// again.
//
// The store is SQLite by default (a file in SORTIE_HOME) and PostgreSQL for
// a team (OpenURL with a postgres:// URL, through pgx's database/sql
// driver). There is one code path for both: the SQL is written once with ?
// placeholders, and dialect.go rewrites it for PostgreSQL and holds the few
// places they differ (GLOB, row locks, which errors mean busy).
//
// Migrations are embedded, forward only, one transaction each, and recorded
// by name in the migrations table. Each has two texts of the same name:
// migrations/NNNN_name.sql for SQLite and migrations/postgres/NNNN_name.sql
// for PostgreSQL. Whoever adds a migration writes both; a store test fails
// when one has no twin, and the conformance suite applies every twin to a
// real PostgreSQL. The PostgreSQL texts keep the SQLite column types'
// meaning: ids are BIGINT identities, times are TEXT in the same RFC 3339
// format, flags are INTEGER 0/1, and text compares byte by byte (COLLATE
// "C", as SQLite's BINARY does), so every reader is the same on both.
//
// It must not import sortie/controller, sortie/controller/service or
// sortie/provision/...: the store keeps state; it neither drives jobs nor
// reaches clouds (smoke_tests/layout_test.go checks it).
//
// # Adding a migration
//
// A change to the store's tables is a new migration,
// migrations/NNNN_name.sql (the next free number), and its PostgreSQL twin
// of the same name, migrations/postgres/NNNN_name.sql: both are always
// written, even when the text is the same. In the twin, ids are BIGINT (an
// identity for a table's own id), text columns are TEXT COLLATE "C" (times
// stay RFC 3339 text, which then sorts as on SQLite), flags INTEGER 0/1,
// and a trigger is a PL/pgSQL function. TestEveryMigrationHasAPostgresTwin
// fails on a migration without a twin, and the store's tests apply every
// twin to a real PostgreSQL. Statements are written once, with ?
// placeholders and SQL both databases take (ON CONFLICT, RETURNING); what
// they do not share goes in dialect.go.
//
// The store's tests start a PostgreSQL server of their own (package pgtest);
// without its binaries the PostgreSQL half of each test is skipped, saying
// so, and `go test ./controller/store -run 'TestX/sqlite'` runs one half.
package store
