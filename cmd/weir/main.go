// Command weir runs weir jobs. It only parses the command line; the
// commands live in package cli.
package main

import (
	"context"
	"os"
	"os/signal"

	"github.com/weirstream/weir/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	os.Exit(cli.Main(ctx, os.Args[1:], os.Stdout, os.Stderr))
}
