package pgio

import (
	"fmt"
	neturl "net/url"
	"strings"

	"github.com/jackc/pgx/v5"
)

// InSchema splits a table setting "schema.table" into the table's name
// and a connection string whose sessions find, and create, it in that
// schema (their search_path is the schema alone), so that every statement
// of a sink names the table alone, as it does in the default schema. A
// name without a dot comes back as it is. A connection string that sets
// search_path already is refused: the schema would be given twice.
func InSchema(url, table string) (conn, name string, err error) {
	schema, name, ok := strings.Cut(table, ".")
	if !ok {
		return url, table, nil
	}
	path := pgx.Identifier{schema}.Sanitize() // quoted: the schema's case is kept, as the table's is
	if strings.Contains(url, "://") {
		u, err := neturl.Parse(url)
		if err != nil {
			return "", "", fmt.Errorf("parse the connection string: %w", err)
		}
		q := u.Query()
		if q.Has("search_path") {
			return "", "", fmt.Errorf("table %s names its schema, and the connection string sets search_path too; give the schema once", table)
		}
		q.Set("search_path", path)
		u.RawQuery = q.Encode()
		return u.String(), name, nil
	}
	if strings.Contains(url, "search_path") {
		return "", "", fmt.Errorf("table %s names its schema, and the connection string sets search_path too; give the schema once", table)
	}
	return strings.TrimSpace(url + " search_path='" + path + "'"), name, nil
}
