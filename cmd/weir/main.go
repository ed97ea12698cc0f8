// Command weir runs weir jobs. It only wires the process to package cli:
// the first Ctrl-C asks the running job to stop gracefully, a second one
// kills the process.
package main

import (
	"context"
	"os"
	"os/signal"

	"github.com/weirstream/weir/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	go func() {
		<-ctx.Done()
		stop() // restore the default: the next Ctrl-C kills the process
	}()
	fi, err := os.Stderr.Stat()
	terminal := err == nil && fi.Mode()&os.ModeCharDevice != 0
	os.Exit(cli.Main(ctx, os.Args[1:], cli.IO{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, Terminal: terminal, Getenv: os.Getenv}))
}
