// Package pgio is an idempotent upsert sink of windowed results into a
// Postgres table (work in progress).
package pgio

import (
	_ "github.com/jackc/pgx/v5"
	_ "github.com/jackc/pgx/v5/pgxpool"
)
