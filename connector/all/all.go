// Package all registers weir's built-in connector kinds in
// connector.Default when it is imported, as a database/sql driver
// registers itself: a program that compiles job specs imports it (the
// weir command and package job do).
//
// A new kind is one package with a Kinds function, and one line here.
package all

import (
	"slices"

	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/connector/fileio"
	"github.com/weirstream/weir/connector/genio"
	"github.com/weirstream/weir/connector/kafkaio"
	"github.com/weirstream/weir/connector/natsio"
	"github.com/weirstream/weir/connector/nexmarkio"
	"github.com/weirstream/weir/connector/pgio"
	"github.com/weirstream/weir/connector/sqliteio"
	"github.com/weirstream/weir/ledger"
)

func init() { connector.Default.MustRegister(Kinds()...) }

// Kinds returns the built-in kinds in the order a job spec's messages
// list them.
func Kinds() []connector.Kind {
	return slices.Concat(fileio.Kinds(), genio.Kinds(), kafkaio.Kinds(), pgio.Kinds(), natsio.Kinds(), sqliteio.Kinds(), ledger.Kinds(), nexmarkio.Kinds())
}
